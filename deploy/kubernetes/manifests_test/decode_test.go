// Package manifests tests deploy/kubernetes: every manifest decodes
// strictly into its Kubernetes API type, every kustomization builds (with
// kustomize's own library, as "kubectl apply -k" would), the rendered
// objects reference each other consistently, and the countersign
// configuration and policy they carry are valid for the countersign built
// from this repository.
//
// It is its own module so that k8s.io/api and kustomize stay out of the
// service's go.mod.
package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

const (
	kubeDir = ".."             // deploy/kubernetes
	repoDir = "../../.."       // the countersign repository
	policy  = "../../policies" // deploy/policies
)

// kinds are the only API types the manifests may use; anything else (a
// typo in apiVersion or kind, an unvetted kind) fails.
var kinds = map[schema.GroupVersionKind]func() any{
	{Version: "v1", Kind: "Namespace"}:                                      func() any { return new(corev1.Namespace) },
	{Version: "v1", Kind: "ServiceAccount"}:                                 func() any { return new(corev1.ServiceAccount) },
	{Version: "v1", Kind: "Service"}:                                        func() any { return new(corev1.Service) },
	{Version: "v1", Kind: "ConfigMap"}:                                      func() any { return new(corev1.ConfigMap) },
	{Version: "v1", Kind: "Secret"}:                                         func() any { return new(corev1.Secret) },
	{Group: "apps", Version: "v1", Kind: "StatefulSet"}:                     func() any { return new(appsv1.StatefulSet) },
	{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}:  func() any { return new(autoscalingv2.HorizontalPodAutoscaler) },
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}:           func() any { return new(policyv1.PodDisruptionBudget) },
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}:      func() any { return new(networkingv1.NetworkPolicy) },
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}: func() any { return new(monitoringv1.ServiceMonitor) },
}

// object is one decoded manifest document.
type object struct {
	where string // file and document index, for messages
	gvk   schema.GroupVersionKind
	meta  metav1.Object
	obj   any // *corev1.Service, *appsv1.StatefulSet, ...
}

func (o object) String() string {
	return fmt.Sprintf("%s %s/%s (%s)", o.gvk.Kind, o.meta.GetNamespace(), o.meta.GetName(), o.where)
}

// splitYAML returns the documents of a multi-document YAML stream,
// without the ones holding only comments or nothing.
func splitYAML(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if isEmptyYAML(doc) {
			continue
		}
		docs = append(docs, doc)
	}
}

func isEmptyYAML(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && line != "---" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}

// strictJSON decodes JSON into v the way the API server's strict field
// validation does: unknown fields, duplicate fields and fields matching
// only case-insensitively are all errors.
func strictJSON(data []byte, v any) error {
	strict, err := kjson.UnmarshalStrict(data, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// strictYAML converts one YAML document to JSON (refusing duplicate keys)
// and decodes it strictly.
func strictYAML(doc []byte, v any) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	return strictJSON(js, v)
}

// decodeObject decodes one manifest document into the API type its
// apiVersion and kind name, strictly.
func decodeObject(where string, doc []byte) (object, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return object{}, fmt.Errorf("%s: %w", where, err)
	}
	return decodeJSONObject(where, js)
}

func decodeJSONObject(where string, js []byte) (object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(js, &tm); err != nil {
		return object{}, fmt.Errorf("%s: %w", where, err)
	}
	gvk := tm.GroupVersionKind()
	if tm.APIVersion == "" || tm.Kind == "" {
		return object{}, fmt.Errorf("%s: apiVersion and kind are required", where)
	}
	mk, ok := kinds[gvk]
	if !ok {
		return object{}, fmt.Errorf("%s: unknown or unvetted kind %s %s", where, tm.APIVersion, tm.Kind)
	}
	v := mk()
	if err := strictJSON(js, v); err != nil {
		return object{}, fmt.Errorf("%s: %s %s: %w", where, tm.APIVersion, tm.Kind, err)
	}
	m, ok := v.(metav1.Object)
	if !ok {
		return object{}, fmt.Errorf("%s: %T has no object metadata", where, v)
	}
	if m.GetName() == "" {
		return object{}, fmt.Errorf("%s: %s without metadata.name", where, tm.Kind)
	}
	return object{where: where, gvk: gvk, meta: m, obj: v}, nil
}

// decodeObjects decodes every document of a manifest stream.
func decodeObjects(where string, data []byte) ([]object, error) {
	docs, err := splitYAML(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	var objs []object
	var errs []error
	for i, doc := range docs {
		o, err := decodeObject(fmt.Sprintf("%s#%d", where, i), doc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		objs = append(objs, o)
	}
	return objs, errors.Join(errs...)
}

// stripDirectives removes strategic-merge-patch directives ($patch,
// $setElementOrder/..., $retainKeys, $deleteFromPrimitiveList/...) so a
// patch file can be decoded strictly like the object it patches.
func stripDirectives(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if strings.HasPrefix(k, "$") {
				delete(x, k)
				continue
			}
			x[k] = stripDirectives(e)
		}
	case []any:
		for i, e := range x {
			x[i] = stripDirectives(e)
		}
	}
	return v
}

// kustomization is one kustomization file, decoded strictly into
// kustomize's own type.
type kustomization struct {
	dir string
	k   types.Kustomization
}

func readKustomization(dir string) (*kustomization, error) {
	path := filepath.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k := &kustomization{dir: dir}
	if err := strictYAML(data, &k.k); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if k.k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.k.Kind != "Kustomization" {
		return nil, fmt.Errorf("%s: apiVersion/kind %s/%s, want kustomize.config.k8s.io/v1beta1 Kustomization", path, k.k.APIVersion, k.k.Kind)
	}
	return k, nil
}

// generatorFiles are the files a kustomization's generators read, made
// relative to its directory's parent path.
func (k *kustomization) generatorFiles() []string {
	var files []string
	add := func(srcs []string) {
		for _, s := range srcs {
			if _, p, ok := strings.Cut(s, "="); ok {
				s = p
			}
			files = append(files, filepath.Join(k.dir, s))
		}
	}
	for _, g := range k.k.ConfigMapGenerator {
		add(g.FileSources)
		add(g.EnvSources)
	}
	for _, g := range k.k.SecretGenerator {
		add(g.FileSources)
		add(g.EnvSources)
	}
	return files
}

func (k *kustomization) patchFiles() []string {
	var files []string
	for _, p := range k.k.Patches {
		if p.Path != "" {
			files = append(files, filepath.Join(k.dir, p.Path))
		}
	}
	return files
}

// resourceDirs are the kustomizations k includes.
func (k *kustomization) resourceDirs() []string {
	var dirs []string
	for _, r := range k.k.Resources {
		p := filepath.Join(k.dir, r)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			dirs = append(dirs, p)
		}
	}
	return dirs
}
