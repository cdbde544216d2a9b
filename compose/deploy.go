//go:build !nocompose

package compose

import "github.com/compose-spec/compose-go/v2/types"

// deployOf is s's Deploy, or nil when s has neither a deploy: section nor
// scale:.
func deployOf(s types.ServiceConfig) *Deploy {
	if s.Deploy == nil && s.Scale == nil {
		return nil
	}
	d := &Deploy{Mode: DeployReplicated, Replicas: s.GetScale(), UpdateOrder: OrderStopFirst, RollbackOrder: OrderStopFirst}
	switch {
	case s.Deploy != nil && s.Deploy.Replicas != nil:
		d.ReplicasKey = "deploy.replicas"
	case s.Scale != nil:
		d.ReplicasKey = "scale"
	}
	if c := s.Deploy; c != nil {
		if c.Mode != "" {
			d.Mode = c.Mode
		}
		if c.UpdateConfig != nil && c.UpdateConfig.Order != "" {
			d.UpdateOrder = c.UpdateConfig.Order
		}
		if c.RollbackConfig != nil && c.RollbackConfig.Order != "" {
			d.RollbackOrder = c.RollbackConfig.Order
		}
	}
	return d
}

// deploy sets Deploy on every mount of a service that has one.
func deploy(ms []Mount, services types.Services) {
	for i := range ms {
		if s, ok := services[ms[i].Service]; ok {
			ms[i].Deploy = deployOf(s)
		}
	}
}
