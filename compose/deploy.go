package compose

import "github.com/compose-spec/compose-go/v2/types"

// Deploy modes and update orders in Deploy (the Compose specification's
// deploy section, https://github.com/compose-spec/compose-spec/blob/main/deploy.md).
const (
	DeployReplicated = "replicated"
	DeployGlobal     = "global"
	OrderStopFirst   = "stop-first"
	OrderStartFirst  = "start-first"
)

// Deploy is what a service's deploy: section (and scale:) says about how
// many of its containers run at once: the keys docker stack deploy honours
// on Swarm, and docker compose up for replicas.
type Deploy struct {
	// Mode is DeployReplicated (the default) or DeployGlobal (one task on
	// every node of the swarm).
	Mode string `json:"mode"`
	// Replicas is deploy.replicas (or scale:), 1 when neither is set.
	Replicas int `json:"replicas"`
	// UpdateOrder and RollbackOrder are update_config.order and
	// rollback_config.order: OrderStopFirst (the default) or
	// OrderStartFirst (the new container starts before the old one stops).
	UpdateOrder   string `json:"update_order"`
	RollbackOrder string `json:"rollback_order"`
}

// deployOf is s's Deploy, or nil when s has neither a deploy: section nor
// scale:.
func deployOf(s types.ServiceConfig) *Deploy {
	if s.Deploy == nil && s.Scale == nil {
		return nil
	}
	d := &Deploy{Mode: DeployReplicated, Replicas: s.GetScale(), UpdateOrder: OrderStopFirst, RollbackOrder: OrderStopFirst}
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
