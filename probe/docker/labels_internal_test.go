package docker

import "testing"

// TestSetLabels: compose's project and service labels count only on a
// container compose created (config hash, or a one-off run); an image built
// by compose carries them too, and plain `docker run` containers inherit
// them.
func TestSetLabels(t *testing.T) {
	for _, tt := range []struct {
		name    string
		labels  map[string]string
		service string
	}{
		{"compose container", map[string]string{labelProject: "p", labelService: "app", labelConfigHash: "abc"}, "app"},
		{"compose run", map[string]string{labelProject: "p", labelService: "app", labelOneOff: "True"}, "app"},
		{"inherited from a compose-built image", map[string]string{labelProject: "p", labelService: "app"}, ""},
	} {
		var c Container
		c.setLabels(tt.labels)
		if c.ComposeService != tt.service {
			t.Errorf("%s: ComposeService = %q, want %q", tt.name, c.ComposeService, tt.service)
		}
	}
}
