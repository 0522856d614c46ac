package labs

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Lints: mistakes that YAML and the schema let through but that make a
// check useless, because it reads something the cluster does not have.

// customResources finds the CustomResourceDefinitions in the manifests the
// lab applies or copies, so that a probe may read the resources they
// define.
func (v *validator) customResources() []kubeResource {
	var files []string
	add := func(actions []Action) {
		for _, a := range actions {
			for _, f := range []string{a.Apply, a.Copy} {
				if f != "" && !slices.Contains(files, f) {
					files = append(files, f)
				}
			}
		}
	}
	add(v.lab.Setup)
	add(v.lab.Cleanup)
	for _, s := range v.lab.Steps {
		add(s.Solve)
	}
	var found []kubeResource
	for _, f := range files {
		b, err := v.lab.Files(f)
		if err != nil {
			continue
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var crd struct {
				Kind string `yaml:"kind"`
				Spec struct {
					Group string `yaml:"group"`
					Names struct {
						Plural     string   `yaml:"plural"`
						Singular   string   `yaml:"singular"`
						Kind       string   `yaml:"kind"`
						ShortNames []string `yaml:"shortNames"`
					} `yaml:"names"`
				} `yaml:"spec"`
			}
			err := dec.Decode(&crd)
			if err == io.EOF {
				break
			}
			if err != nil {
				// Not YAML of objects, or a document that is something
				// else; manifest() reports what matters.
				if _, ok := err.(*yaml.TypeError); !ok {
					break
				}
				continue
			}
			n := crd.Spec.Names
			if crd.Kind != "CustomResourceDefinition" || n.Plural == "" {
				continue
			}
			if n.Singular == "" {
				n.Singular = strings.ToLower(n.Kind)
			}
			found = append(found, kubeResource{plural: n.Plural, singular: n.Singular, kind: n.Kind, group: crd.Spec.Group, short: n.ShortNames})
		}
	}
	return found
}

// versionedGroupRE matches the version and group of deployments.v1.apps.
var versionedGroupRE = regexp.MustCompile(`^v\d+(?:(?:alpha|beta)\d+)?(?:\.(.*))?$`)

func (v *validator) resources() []kubeResource {
	return append(slices.Clip(builtinResources), v.custom...)
}

// kubeResource checks that a kube probe reads a resource the cluster has.
func (v *validator) kubeResource(where []any, name string) {
	all := v.resources()
	if _, ok := findResource(all, name); ok {
		return
	}
	res, group, grouped := strings.Cut(name, ".")
	known := builtinGroup(group) || slices.ContainsFunc(v.custom, func(r kubeResource) bool { return r.group == group })
	if grouped && !known {
		if m := versionedGroupRE.FindStringSubmatch(group); m != nil && (builtinGroup(m[1]) || slices.ContainsFunc(v.custom, func(r kubeResource) bool { return r.group == m[1] })) {
			// kubectl takes deployments.v1.apps; the grader looks a
			// resource up by name and group only.
			without := strings.TrimSuffix(res+"."+m[1], ".")
			v.at(where, "resource %q: write it without the API version, as %s", name, without)
		}
		// Otherwise a custom resource the lab installs some other way: we
		// cannot tell whether the cluster will have it.
		return
	}
	msg := fmt.Sprintf("unknown resource %q: Kubernetes 1.34 has no such built-in resource", name)
	if r, ok := findResource(all, res); ok && grouped {
		in := "the core group, so it is written without one"
		if r.group != "" {
			in = fmt.Sprintf("the group %s", r.group)
		}
		msg = fmt.Sprintf("resource %q: %s is in %s", name, r.plural, in)
	} else if guess := closest(res, resourceNames(all)); guess != "" {
		msg += fmt.Sprintf(" (did you mean `%s`?)", guess)
	}
	v.at(where, "%s; write it as kubectl takes it (pods, po, Pod, deployments.apps), and a custom resource with its API group (widgets.example.com)", msg)
}

// eventsKind checks the kind an events probe filters by: Kubernetes
// matches involvedObject.kind exactly, so "pod" finds no event of a Pod.
func (v *validator) eventsKind(where []any, kind string) {
	all := v.resources()
	var kinds []string
	for _, r := range all {
		if r.kind == kind {
			return
		}
		kinds = append(kinds, r.kind)
	}
	if r, ok := findResource(all, kind); ok {
		v.at(where, "events kind %q: write the kind as Kubernetes does, %s; events are picked by it exactly, so %q finds none", kind, r.kind, kind)
		return
	}
	if guess := closest(kind, kinds); guess != "" {
		v.at(where, "unknown kind %q (did you mean `%s`?); events are picked by the kind exactly", kind, guess)
	}
	// Anything else may be the kind of a custom resource.
}
