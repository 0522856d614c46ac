package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"k8s.io/client-go/rest"

	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/sandbox/kube"
	"github.com/podpath/podpath/session"
)

// backend is what the sandbox commands ask of either sandbox backend.
type backend interface {
	NodeImage() string
	Create(ctx context.Context, spec sandbox.Spec, progress func(sandbox.Event)) (*sandbox.Info, error)
	Exec(ctx context.Context, name, node string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error)
	List(ctx context.Context) ([]sandbox.Info, error)
	Kubeconfig(ctx context.Context, name string) (string, error)
	Delete(ctx context.Context, name string) error
	Hibernate(ctx context.Context, name string) error
	Resume(ctx context.Context, name string) error
}

// openBackend opens the sandbox backend PODPATH_SANDBOX names (docker, the
// default, or kubernetes) with the given node image ("" for the default),
// as the CLI and the engine use it.
func openBackend(image string, log *slog.Logger) (backend, session.Sandboxes, error) {
	if _, err := sandbox.RegistryMirrors(); err != nil {
		return nil, nil, err
	}
	switch kind := os.Getenv("PODPATH_SANDBOX"); kind {
	case "", "docker":
		var opts []sandbox.Option
		if image != "" {
			opts = append(opts, sandbox.WithNodeImage(image))
		}
		if log != nil {
			opts = append(opts, sandbox.WithLogger(log))
		}
		m := sandbox.NewManager(opts...)
		return m, session.Manager(m), nil
	case "kubernetes":
		b, _, err := kubeBackend(image, os.Getenv, log)
		if err != nil {
			return nil, nil, err
		}
		return b, session.Kube(b), nil
	default:
		return nil, nil, fmt.Errorf("PODPATH_SANDBOX=%q: use docker or kubernetes", kind)
	}
}

// kubeBackend opens the Kubernetes backend from the PODPATH_KUBE_*
// settings get returns, and gives its host cluster's configuration too.
func kubeBackend(image string, get func(string) string, log *slog.Logger) (*kube.Backend, *rest.Config, error) {
	if image == "" {
		image = get("PODPATH_NODE_IMAGE")
	}
	if image == "" {
		image = sandbox.DefaultNodeImage
	}
	o, err := kube.OptionsFromEnv(get, image)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := kube.HostConfig(get("PODPATH_KUBECONFIG"))
	if err != nil {
		return nil, nil, err
	}
	b, err := kube.New(cfg, o, log)
	if err != nil {
		return nil, nil, err
	}
	return b, cfg, nil
}
