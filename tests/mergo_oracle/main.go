// mergo_oracle runs the real mergo on the test cases of tests/test_backend_mergo.py.
//
// It reads one JSON case per line on standard input and writes one JSON result per line:
//
//	{"op": "merge", "type": "PodSpec", "dst": {...}, "src": {...}}
//	    mergo.Merge(&dst, &src, mergo.WithOverride, mergo.WithAppendSlice) on the mirror type (k8stypes.go).
//	{"op": "assemble", "template": {PodSpec}, "base": {PodSpec}, "primary": "name", "primaryInit": "name", "legacy": false}
//	    the cluster template's spec under the task's pod spec, the way flyteplugins v1.16.8 does it
//	    (pod_helper.go MergeBasePodSpecOntoTemplate, restated here in our own code), every merge by mergo.
//
// A result is {"ok": <json>} or {"err": "message"}.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/imdario/mergo"
)

// Format stands for resource.Format, the exported string type resource.Quantity embeds.
type Format string

// Quantity has resource.Quantity's shape as reflect sees it: unexported state and the embedded, exported
// Format, the one thing mergo can set. It keeps the text it was given (the Python side canonicalises both).
type Quantity struct {
	text string
	Format
}

func (q Quantity) MarshalJSON() ([]byte, error) {
	if q.text == "" {
		return []byte(`"0"`), nil
	}
	return json.Marshal(q.text)
}

func (q *Quantity) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*q = Quantity{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n json.Number
		if json.Unmarshal(b, &n) != nil {
			return err
		}
		s = n.String()
	}
	q.text = s
	switch {
	case strings.HasSuffix(s, "i"):
		q.Format = "BinarySI"
	case strings.ContainsAny(s, "eE"):
		q.Format = "DecimalExponent"
	default:
		q.Format = "DecimalSI"
	}
	return nil
}

// IntOrString has intstr.IntOrString's three exported fields: mergo merges them one by one.
type IntOrString struct {
	Type   int64
	IntVal int64
	StrVal string
}

func (v IntOrString) MarshalJSON() ([]byte, error) {
	if v.Type == 1 {
		return json.Marshal(v.StrVal)
	}
	return json.Marshal(v.IntVal)
}

func (v *IntOrString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		v.Type = 1
		return json.Unmarshal(b, &v.StrVal)
	}
	v.Type = 0
	return json.Unmarshal(b, &v.IntVal)
}

// Time embeds time.Time like metav1.Time: no exported field, so mergo replaces it whole.
type Time struct {
	time.Time
}

func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.UTC().Format(time.RFC3339))
}

func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	parsed, err := time.Parse(time.RFC3339, s)
	t.Time = parsed.Local()
	return err
}

func merge(dst, src interface{}) error {
	return mergo.Merge(dst, src, mergo.WithOverride, mergo.WithAppendSlice)
}

// deepCopy does what the generated DeepCopy methods do: nothing shared, and every slice of exactly its length,
// so that a later append never writes into an array another value still holds.
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Ptr:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(deepCopy(v.Elem()))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v) // unexported state (a Quantity's text) comes along
		for i := 0; i < v.NumField(); i++ {
			if out.Field(i).CanSet() {
				out.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			out.Index(i).Set(deepCopy(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for _, k := range v.MapKeys() {
			out.SetMapIndex(k, deepCopy(v.MapIndex(k)))
		}
		return out
	}
	return v
}

func copyContainer(c *Container) *Container {
	out := deepCopy(reflect.ValueOf(c)).Interface().(*Container)
	return out
}

// layer rebuilds one container list: for each task container, a copy of the template's default container,
// then (for the primary) the template's primary container, then (v1.16.3 and later: for other containers
// not named like the default) the template containers of its very name, used through a per-iteration copy
// as a Go 1.22 loop variable is, then the task container itself.
func layer(template, task []Container, defaultName, primaryName, primary string, legacy bool) ([]Container, error) {
	var def, prim *Container
	for i := range template {
		if template[i].Name == defaultName {
			def = &template[i]
		} else if template[i].Name == primaryName {
			prim = &template[i]
		}
	}
	var out []Container
	for ti := range task {
		base := task[ti]
		var m *Container
		if def != nil {
			m = copyContainer(def)
		}
		if base.Name == primary && prim != nil {
			if m == nil {
				m = copyContainer(prim)
			} else if err := merge(m, prim); err != nil {
				return nil, err
			}
		}
		for i := range template {
			same := template[i] // a fresh variable per iteration: a shallow copy
			if same.Name != base.Name || (!legacy && (base.Name == primary || base.Name == defaultName)) {
				continue
			}
			if m == nil {
				m = &same
			} else if err := merge(m, same); err != nil {
				return nil, err
			}
		}
		if m == nil {
			m = copyContainer(&base)
		} else if err := merge(m, base); err != nil {
			return nil, err
		}
		out = append(out, *m)
	}
	return out, nil
}

func assemble(template, task *PodSpec, primary, primaryInit string, legacy bool) (*PodSpec, error) {
	merged := deepCopy(reflect.ValueOf(template)).Interface().(*PodSpec)
	if err := merge(merged, task); err != nil {
		return nil, err
	}
	var err error
	if merged.Containers, err = layer(template.Containers, task.Containers, "default", "primary", primary, legacy); err != nil {
		return nil, err
	}
	merged.InitContainers, err = layer(template.InitContainers, task.InitContainers, "default-init", "primary-init", primaryInit, legacy)
	return merged, err
}

type testCase struct {
	Op          string          `json:"op"`
	Type        string          `json:"type"`
	Dst         json.RawMessage `json:"dst"`
	Src         json.RawMessage `json:"src"`
	Template    json.RawMessage `json:"template"`
	Base        json.RawMessage `json:"base"`
	Primary     string          `json:"primary"`
	PrimaryInit string          `json:"primaryInit"`
	Legacy      bool            `json:"legacy"`
}

func run(line []byte) (interface{}, error) {
	var c testCase
	if err := json.Unmarshal(line, &c); err != nil {
		return nil, err
	}
	switch c.Op {
	case "merge":
		dst, src := newByName(c.Type), newByName(c.Type)
		if dst == nil {
			return nil, fmt.Errorf("unknown type %q", c.Type)
		}
		if err := json.Unmarshal(c.Dst, dst); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(c.Src, src); err != nil {
			return nil, err
		}
		return dst, merge(dst, src)
	case "assemble":
		decoded, task := &PodSpec{}, &PodSpec{}
		if err := json.Unmarshal(c.Template, decoded); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(c.Base, task); err != nil {
			return nil, err
		}
		// the backend's template is a DeepCopy (PodTemplateStore.LoadOrDefault): no spare capacity in its slices
		template := deepCopy(reflect.ValueOf(decoded)).Interface().(*PodSpec)
		return assemble(template, task, c.Primary, c.PrimaryInit, c.Legacy)
	}
	return nil, fmt.Errorf("unknown op %q", c.Op)
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		if strings.TrimSpace(in.Text()) == "" {
			continue
		}
		result, err := run(in.Bytes())
		if err != nil {
			_ = enc.Encode(map[string]string{"err": err.Error()})
		} else {
			_ = enc.Encode(map[string]interface{}{"ok": result})
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
