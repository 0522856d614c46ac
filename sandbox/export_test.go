package sandbox

import "context"

// EngineKubeconfig is Kubeconfig without kind's docker CLI fallback, for
// tests that prove the Engine API path.
func EngineKubeconfig(ctx context.Context, m *Manager, name string) (string, error) {
	return m.creatingKubeconfig(ctx, name)
}
