package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	"github.com/podpath/podpath/internal/dockercli"
)

// networkLabel marks the Docker networks podpath made, with the sandbox name.
const networkLabel = "io.podpath.sandbox"

// ensureNetwork creates the sandbox's own Docker bridge network with a /24
// from the pool that no other Docker network uses. Docker keeps bridge
// networks apart, so one learner's Pods cannot reach another's nodes.
func (m *Manager) ensureNetwork(ctx context.Context, name string) error {
	m.netMu.Lock()
	defer m.netMu.Unlock()
	net := networkName(name)
	if out, _ := dockercli.Output(ctx, "network", "ls", "-q", "--filter", "name=^"+net+"$"); out != "" {
		return nil
	}
	pool, err := netip.ParsePrefix(m.pool)
	if err != nil || !pool.Addr().Is4() || pool.Bits() > 24 || pool.Bits() < 16 {
		return fmt.Errorf("network pool %q is not an IPv4 range between /16 and /24 (PODPATH_NETWORK_POOL)", m.pool)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		used, err := usedSubnets(ctx)
		if err != nil {
			return err
		}
		subnet, ok := freeSubnet(pool.Masked(), used)
		if !ok {
			return fmt.Errorf("no free /24 left in the sandbox network pool %s: delete unused sandboxes or widen PODPATH_NETWORK_POOL", m.pool)
		}
		gw := subnet.Addr().Next()
		lastErr = dockercli.Run(ctx, "network", "create", "--driver", "bridge",
			"--subnet", subnet.String(), "--gateway", gw.String(),
			"--label", networkLabel+"="+name,
			// kind's own network settings: let nodes reach the host's
			// published ports through the bridge.
			"-o", "com.docker.network.bridge.enable_ip_masquerade=true",
			net)
		if lastErr == nil {
			return nil
		}
		if !strings.Contains(lastErr.Error(), "overlap") {
			return lastErr
		}
	}
	return lastErr
}

// usedSubnets lists the IPv4 subnets of every Docker network.
func usedSubnets(ctx context.Context) ([]netip.Prefix, error) {
	ids, err := dockercli.Output(ctx, "network", "ls", "-q")
	if err != nil {
		return nil, err
	}
	if ids == "" {
		return nil, nil
	}
	out, err := dockercli.Output(ctx, append([]string{"network", "inspect", "--format", "{{json .IPAM.Config}}"}, strings.Fields(ids)...)...)
	if err != nil {
		return nil, err
	}
	var used []netip.Prefix
	for _, line := range strings.Split(out, "\n") {
		var cfgs []struct{ Subnet string }
		if json.Unmarshal([]byte(line), &cfgs) != nil {
			continue
		}
		for _, c := range cfgs {
			if p, err := netip.ParsePrefix(c.Subnet); err == nil && p.Addr().Is4() {
				used = append(used, p.Masked())
			}
		}
	}
	return used, nil
}

// freeSubnet returns the first /24 of pool that overlaps none of used.
func freeSubnet(pool netip.Prefix, used []netip.Prefix) (netip.Prefix, bool) {
	a := pool.Addr().As4()
	count := 1 << (24 - pool.Bits())
	for i := 0; i < count; i++ {
		b := a
		b[2] = a[2] + byte(i)
		cand := netip.PrefixFrom(netip.AddrFrom4(b), 24)
		free := true
		for _, u := range used {
			if u.Overlaps(cand) {
				free = false
				break
			}
		}
		if free {
			return cand, true
		}
	}
	return netip.Prefix{}, false
}

// removeNetwork deletes the sandbox's network; a missing one is fine.
func removeNetwork(ctx context.Context, name string) error {
	err := dockercli.Run(ctx, "network", "rm", networkName(name))
	if err != nil && (strings.Contains(err.Error(), "No such network") || strings.Contains(err.Error(), "not found")) {
		return nil
	}
	return err
}
