package override

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// References are the cluster facts a string of an override may name.
const References = "${cluster.name}, ${cluster.labels[KEY]}, ${cluster.annotations[KEY]} or ${cluster.claims[NAME]}"

// Substitute puts c's facts into s where s names them (References), and turns $${ into ${. A fact c does
// not have, or a ${ that names no fact, is an error.
func Substitute(s string, c Cluster) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var out strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			out.WriteString(s)
			return out.String(), nil
		}
		if i > 0 && s[i-1] == '$' {
			out.WriteString(s[:i-1] + "${") // $${: a literal ${
			s = s[i+2:]
			continue
		}
		out.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%q: ${ without its }: name %s, or write $${ for a literal ${", s[i:], References)
		}
		ref := s[i+2 : i+end]
		value, err := c.fact(ref)
		if err != nil {
			return "", err
		}
		out.WriteString(value)
		s = s[i+end+1:]
	}
}

// fact is the value of the fact ref names (what is between ${ and }).
func (c Cluster) fact(ref string) (string, error) {
	if ref == "cluster.name" {
		return c.Name, nil
	}
	for _, m := range []struct {
		prefix, what string
		values       map[string]string
	}{
		{"cluster.labels[", "label", c.Labels},
		{"cluster.annotations[", "annotation", c.Annotations},
		{"cluster.claims[", "ClusterClaim", c.Claims},
	} {
		key, ok := strings.CutPrefix(ref, m.prefix)
		if !ok {
			continue
		}
		key, ok = strings.CutSuffix(key, "]")
		if !ok || key == "" {
			return "", fmt.Errorf("${%s}: want ${%sKEY]}", ref, m.prefix)
		}
		value, ok := m.values[key]
		if !ok {
			return "", fmt.Errorf("cluster %s has no %s %s (${%s})", c.Name, m.what, key, ref)
		}
		return value, nil
	}
	return "", fmt.Errorf("${%s} names no fact of a cluster: name %s, or write $${ for a literal ${", ref, References)
}

// Resolve is the overrides that select c, in order, each with c's facts put into its strings: what
// Apply changes c's objects by. Two clusters with the same resolved overrides get the same objects.
func Resolve(overrides []v1alpha2.Override, c Cluster) ([]v1alpha2.Override, error) {
	var out []v1alpha2.Override
	for i := range overrides {
		o := &overrides[i]
		selected, err := Selects(o, c)
		if err != nil {
			return nil, err
		}
		if !selected {
			continue
		}
		resolved, err := resolve(o, c)
		if err != nil {
			return nil, &Error{Override: o.Name, Cluster: c.Name, Err: err}
		}
		out = append(out, resolved)
	}
	return out, nil
}

// resolve is o with c's facts in its strings; only what Apply reads is kept.
func resolve(o *v1alpha2.Override, c Cluster) (v1alpha2.Override, error) {
	out := v1alpha2.Override{Name: o.Name}
	var err error
	if out.Components, err = resolveComponents(o.Components, c); err != nil {
		return out, err
	}
	sub := func(s string) string {
		if err != nil {
			return ""
		}
		var v string
		v, err = Substitute(s, c)
		return v
	}
	if im := o.Image; im != nil {
		out.Image = &v1alpha2.ImageOverride{Component: im.Component, Registry: sub(im.Registry), Repository: sub(im.Repository), Tag: sub(im.Tag)}
	}
	subMap := func(m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		r := make(map[string]string, len(m))
		for k, v := range m {
			r[k] = sub(v)
		}
		return r
	}
	out.Labels, out.Annotations = subMap(o.Labels), subMap(o.Annotations)
	for _, p := range o.Patches {
		rp := v1alpha2.ObjectPatch{Target: p.Target}
		if p.MergePatch != nil {
			raw, rerr := substituteJSON(p.MergePatch.Raw, c)
			if rerr != nil && err == nil {
				err = fmt.Errorf("mergePatch of %s: %w", targetString(p.Target), rerr)
			}
			rp.MergePatch = &runtime.RawExtension{Raw: raw}
		}
		for _, op := range p.JSONPatch {
			rop := op
			rop.Path, rop.From = sub(op.Path), sub(op.From)
			if op.Value != nil {
				raw, rerr := substituteJSON(op.Value.Raw, c)
				if rerr != nil && err == nil {
					err = fmt.Errorf("jsonPatch of %s, %s %s: %w", targetString(p.Target), op.Op, op.Path, rerr)
				}
				rop.Value = &runtime.RawExtension{Raw: raw}
			}
			rp.JSONPatch = append(rp.JSONPatch, rop)
		}
		out.Patches = append(out.Patches, rp)
	}
	return out, err
}

// substituteJSON puts c's facts into every string of the JSON value raw.
func substituteJSON(raw []byte, c Cluster) ([]byte, error) {
	if !strings.Contains(string(raw), "${") {
		return raw, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	v, err := substituteValue(v, c)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func substituteValue(v any, c Cluster) (any, error) {
	switch t := v.(type) {
	case string:
		return Substitute(t, c)
	case []any:
		for i := range t {
			var err error
			if t[i], err = substituteValue(t[i], c); err != nil {
				return nil, err
			}
		}
	case map[string]any:
		for k := range t {
			var err error
			if t[k], err = substituteValue(t[k], c); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}
