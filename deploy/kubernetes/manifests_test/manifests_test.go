package manifests

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// exampleSecretsFile shows the Secrets the manifests reference but never
// ship (their values are the operator's).
const exampleSecretsFile = "secret.example.yaml"

// kustomizationDirs lists every directory of deploy/kubernetes holding a
// kustomization.yaml: base and the overlays.
func kustomizationDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(kubeDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "manifests_test" {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(dirs, filepath.Join(kubeDir, "base")) {
		t.Fatalf("no kustomization.yaml in %s/base", kubeDir)
	}
	return dirs
}

// TestManifestFilesDecodeStrictly reads every YAML file of
// deploy/kubernetes (and the kustomizations they include): kustomizations
// decode strictly into kustomize's type, patches and manifests into the
// Kubernetes API type their apiVersion and kind name; countersign
// configuration files are left to TestKustomizeBuilds, which runs
// "countersign config check" on what the ConfigMaps really carry.
func TestManifestFilesDecodeStrictly(t *testing.T) {
	// Kustomizations first: they say what every other file is.
	var ks []*kustomization
	seen := map[string]bool{}
	queue := kustomizationDirs(t)
	for len(queue) > 0 {
		dir := filepath.Clean(queue[0])
		queue = queue[1:]
		if seen[dir] {
			continue
		}
		seen[dir] = true
		k, err := readKustomization(dir)
		if err != nil {
			t.Error(err)
			continue
		}
		ks = append(ks, k)
		queue = append(queue, k.resourceDirs()...)
	}
	generated := map[string]bool{} // generator inputs: configuration, policy, keys
	patches := map[string]bool{}
	resources := map[string]bool{}
	for _, k := range ks {
		for _, f := range k.generatorFiles() {
			if _, err := os.Stat(f); err != nil {
				t.Errorf("%s/kustomization.yaml: generator file: %v", k.dir, err)
			}
			generated[filepath.Clean(f)] = true
		}
		for _, f := range k.patchFiles() {
			patches[filepath.Clean(f)] = true
		}
		for _, r := range k.k.Resources {
			resources[filepath.Clean(filepath.Join(k.dir, r))] = true
		}
	}

	kindsSeen := map[string]int{}
	err := filepath.WalkDir(kubeDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "manifests_test" {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		if ext != ".yaml" && ext != ".yml" || d.Name() == "kustomization.yaml" {
			return nil
		}
		path = filepath.Clean(path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch {
		case generated[path]:
			return nil // countersign configuration, checked through the build
		case patches[path]:
			docs, err := splitYAML(data)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				return nil
			}
			for i, doc := range docs {
				var v any
				if err := yaml.Unmarshal(doc, &v); err != nil {
					t.Errorf("%s#%d: %v", path, i, err)
					continue
				}
				js, err := json.Marshal(stripDirectives(v))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := decodeJSONObject(fmt.Sprintf("%s#%d (patch)", path, i), js); err != nil {
					t.Error(err)
				}
			}
		default:
			if !resources[path] && d.Name() != exampleSecretsFile {
				t.Errorf("%s is in no kustomization (resources, patches or generators): add it, or remove it", path)
			}
			objs, err := decodeObjects(path, data)
			if err != nil {
				t.Error(err)
			}
			for _, o := range objs {
				kindsSeen[o.gvk.Kind]++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Namespace", "ServiceAccount", "StatefulSet", "Service", "Secret", "HorizontalPodAutoscaler", "PodDisruptionBudget", "NetworkPolicy", "ServiceMonitor"} {
		if kindsSeen[kind] == 0 {
			t.Errorf("no %s among the manifest files", kind)
		}
	}
}

// TestStrictDecodingRefusesTypos makes sure the decoding above would catch
// what it is there for.
func TestStrictDecodingRefusesTypos(t *testing.T) {
	cases := map[string]string{
		"unknown field":         "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec:\n  replica: 3\n",
		"case mismatch":         "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  clusterIp: None\n",
		"duplicate key":         "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  type: ClusterIP\n  type: NodePort\n",
		"nested unknown field":  "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          imagePullPolice: Always\n",
		"unknown kind":          "apiVersion: v1\nkind: Servce\nmetadata: {name: x}\n",
		"wrong group":           "apiVersion: extensions/v1beta1\nkind: NetworkPolicy\nmetadata: {name: x}\n",
		"wrong type":            "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: x}\nspec:\n  minReplicas: three\n",
		"servicemonitor typo":   "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec:\n  selector: {}\n  endpoints:\n    - port: admin\n      intervall: 30s\n",
		"no name":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
		"configmap data number": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  a: 1\n",
	}
	for name, doc := range cases {
		if _, err := decodeObjects(name, []byte(doc)); err == nil {
			t.Errorf("%s: decoded without error:\n%s", name, doc)
		}
	}
	if _, err := decodeObjects("ok", []byte("# comment\n---\napiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  clusterIP: None\n---\n")); err != nil {
		t.Errorf("valid stream refused: %v", err)
	}
}

// TestKustomizeBuilds renders the base and every overlay with kustomize's
// library (what "kubectl apply -k" and "kustomize build" run), decodes
// every rendered object strictly and checks the set for consistency.
func TestKustomizeBuilds(t *testing.T) {
	secrets := exampleSecrets(t)
	configs := map[string]config{}
	for _, dir := range kustomizationDirs(t) {
		name, _ := filepath.Rel(kubeDir, dir)
		t.Run(name, func(t *testing.T) {
			k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
			rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
			if err != nil {
				t.Fatalf("kustomize build %s: %v", dir, err)
			}
			out, err := rm.AsYaml()
			if err != nil {
				t.Fatal(err)
			}
			objs, err := decodeObjects("kustomize build "+name, out)
			if err != nil {
				t.Fatal(err)
			}
			configs[name] = checkRendered(t, newRendered(t, objs), secrets)
		})
	}

	// An overlay's configuration is a copy of the base's with its own
	// sections changed: the rest must not drift.
	base := configs["base"]
	for name, cfg := range configs {
		if name == "base" || base == nil || cfg == nil {
			continue
		}
		own, ok := overlayConfigSections[filepath.ToSlash(name)]
		if !ok {
			t.Errorf("%s: add it to overlayConfigSections (the configuration sections it changes)", name)
			continue
		}
		for _, key := range sortedKeys(mergeKeys(base, cfg)) {
			same := reflect.DeepEqual(base[key], cfg[key])
			switch {
			case !same && !slices.Contains(own, key):
				t.Errorf("%s: configuration key %s differs from base/countersign.yaml: keep overlays in step with the base", name, key)
			case same && slices.Contains(own, key):
				// audit-object-lock until audit.upload exists.
				t.Logf("%s: configuration key %s is still the same as the base's", name, key)
			}
		}
	}
}

// overlayConfigSections are the top-level configuration keys each overlay
// exists to change.
var overlayConfigSections = map[string][]string{
	"overlays/opa-bundle":        {"policy"},
	"overlays/audit-object-lock": {"audit"},
}

func mergeKeys(a, b config) map[string]bool {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

// exampleSecrets maps each Secret of secret.example.yaml to its keys.
func exampleSecrets(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(kubeDir, exampleSecretsFile))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects(exampleSecretsFile, data)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]string{}
	for _, o := range objs {
		s, ok := o.obj.(interface{ GetName() string })
		if !ok || o.gvk.Kind != "Secret" {
			t.Fatalf("%s: only Secrets belong in %s", o, exampleSecretsFile)
		}
		sec := secretKeys(o)
		m[s.GetName()] = sec
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkPEMPublicKey reports whether data holds a PEM public key (what
// policy.bundle.verification.public_key_file must hold for RS/PS/ES).
func checkPEMPublicKey(data string) error {
	b, _ := pem.Decode([]byte(data))
	if b == nil {
		return fmt.Errorf("no PEM block")
	}
	if _, err := x509.ParsePKIXPublicKey(b.Bytes); err != nil {
		if _, cerr := x509.ParseCertificate(b.Bytes); cerr != nil {
			return err
		}
	}
	return nil
}

func containsAll(haystack string, needles ...string) bool {
	for _, n := range needles {
		if !strings.Contains(haystack, n) {
			return false
		}
	}
	return true
}
