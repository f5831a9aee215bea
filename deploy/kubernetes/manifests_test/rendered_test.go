package manifests

import (
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// The countersign container's contract with the manifests.
const (
	containerName = "countersign"
	imageName     = "countersign"
	healthPath    = "/healthz"
	readyPath     = "/readyz"
	metricsPath   = "/metrics"
	// policyConfigMap is generated from the library and the combined
	// example (deploy/policies/kustomization.yaml), in one directory.
	policyConfigMap = "countersign-policy"
)

// policySources are the directories countersign-policy is generated from.
var policySources = []string{policy + "/lib", policy + "/combined"}

// rendered is one kustomize build, by kind.
type rendered struct {
	objs       []object
	namespaces []*corev1.Namespace
	sas        map[string]*corev1.ServiceAccount
	sts        []*appsv1.StatefulSet
	services   []*corev1.Service
	cms        map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
	hpas       []*autoscalingv2.HorizontalPodAutoscaler
	pdbs       []*policyv1.PodDisruptionBudget
	nps        []*networkingv1.NetworkPolicy
	sms        []*monitoringv1.ServiceMonitor
}

func newRendered(t *testing.T, objs []object) *rendered {
	r := &rendered{objs: objs, sas: map[string]*corev1.ServiceAccount{}, cms: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	for _, o := range objs {
		switch v := o.obj.(type) {
		case *corev1.Namespace:
			r.namespaces = append(r.namespaces, v)
		case *corev1.ServiceAccount:
			r.sas[v.Name] = v
		case *appsv1.StatefulSet:
			r.sts = append(r.sts, v)
		case *corev1.Service:
			r.services = append(r.services, v)
		case *corev1.ConfigMap:
			r.cms[v.Name] = v
		case *corev1.Secret:
			r.secrets[v.Name] = v
		case *autoscalingv2.HorizontalPodAutoscaler:
			r.hpas = append(r.hpas, v)
		case *policyv1.PodDisruptionBudget:
			r.pdbs = append(r.pdbs, v)
		case *networkingv1.NetworkPolicy:
			r.nps = append(r.nps, v)
		case *monitoringv1.ServiceMonitor:
			r.sms = append(r.sms, v)
		default:
			t.Fatalf("%s: no checks for %T", o, v)
		}
	}
	return r
}

func secretKeys(o object) []string {
	s := o.obj.(*corev1.Secret)
	var keys []string
	for k := range s.Data {
		keys = append(keys, k)
	}
	for k := range s.StringData {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// selects reports whether sel is non-empty and matches set.
func selects(t *testing.T, sel *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Errorf("selector %v: %v", sel, err)
		return false
	}
	return s.Matches(labels.Set(set))
}

// checkRendered checks one build and returns the countersign
// configuration its ConfigMap carries.
func checkRendered(t *testing.T, r *rendered, exampleSecrets map[string][]string) config {
	// One namespace for everything; the Namespace object, if shipped, is it.
	ns := ""
	for _, o := range r.objs {
		if o.gvk.Kind == "Namespace" {
			continue
		}
		if o.meta.GetNamespace() == "" {
			t.Errorf("%s has no namespace", o)
		} else if ns == "" {
			ns = o.meta.GetNamespace()
		} else if o.meta.GetNamespace() != ns {
			t.Errorf("%s is not in namespace %s", o, ns)
		}
		if o.meta.GetLabels()["app.kubernetes.io/part-of"] != "countersign" {
			t.Errorf("%s lacks the kustomization's label app.kubernetes.io/part-of=countersign", o)
		}
	}
	for _, n := range r.namespaces {
		if n.Name != ns {
			t.Errorf("Namespace %s, but the objects are in %s", n.Name, ns)
		}
		if n.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
			t.Errorf("Namespace %s: want pod-security.kubernetes.io/enforce=restricted", n.Name)
		}
	}

	if len(r.sts) != 1 {
		t.Fatalf("%d StatefulSets, want 1", len(r.sts))
	}
	sts := r.sts[0]
	pod := &sts.Spec.Template
	podLabels := pod.Labels
	if !selects(t, sts.Spec.Selector, podLabels) {
		t.Errorf("StatefulSet %s: selector %v does not select its pod labels %v", sts.Name, sts.Spec.Selector, podLabels)
	}
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == containerName {
			c = &pod.Spec.Containers[i]
		}
	}
	if c == nil {
		t.Fatalf("StatefulSet %s: no container %q", sts.Name, containerName)
	}
	portByName := map[string]corev1.ContainerPort{}
	portByNumber := map[int32]corev1.ContainerPort{}
	for _, p := range c.Ports {
		if p.Name == "" {
			t.Errorf("container port %d has no name", p.ContainerPort)
		}
		portByName[p.Name] = p
		portByNumber[p.ContainerPort] = p
	}
	// resolve finds the container port a Service, probe or policy names.
	resolve := func(what string, p intstr.IntOrString) (corev1.ContainerPort, bool) {
		var cp corev1.ContainerPort
		var ok bool
		if p.Type == intstr.String {
			cp, ok = portByName[p.StrVal]
		} else {
			cp, ok = portByNumber[p.IntVal]
		}
		if !ok {
			t.Errorf("%s: port %s is none of the container's ports", what, p.String())
		}
		return cp, ok
	}

	checkPodSecurity(t, sts, c)
	cfg := checkConfigAndMounts(t, r, sts, c, exampleSecrets)

	// Ports: the sign listener and the admin listener of the configuration.
	signPort := portOf(t, "listen", cfg.str("listen"))
	if p, ok := portByName["sign"]; !ok || p.ContainerPort != signPort {
		t.Errorf("container port sign is %d, want listen's port %d", p.ContainerPort, signPort)
	}
	probePort := signPort
	if a := cfg.str("admin_listen"); a != "" {
		probePort = portOf(t, "admin_listen", a)
		if p, ok := portByName["admin"]; !ok || p.ContainerPort != probePort {
			t.Errorf("container port admin is %d, want admin_listen's port %d", p.ContainerPort, probePort)
		}
	}

	// Probes: liveness on /healthz, readiness on /readyz, on the listener
	// that serves them without client certificates.
	for _, pr := range []struct {
		name, path string
		probe      *corev1.Probe
		required   bool
	}{
		{"livenessProbe", healthPath, c.LivenessProbe, true},
		{"readinessProbe", readyPath, c.ReadinessProbe, true},
		{"startupProbe", healthPath, c.StartupProbe, false},
	} {
		if pr.probe == nil {
			if pr.required {
				t.Errorf("container %s has no %s", c.Name, pr.name)
			}
			continue
		}
		g := pr.probe.HTTPGet
		if g == nil {
			t.Errorf("%s is not an httpGet probe", pr.name)
			continue
		}
		if g.Path != pr.path {
			t.Errorf("%s hits %s, want %s", pr.name, g.Path, pr.path)
		}
		if cp, ok := resolve(pr.name, g.Port); ok && cp.ContainerPort != probePort {
			t.Errorf("%s uses port %d, want %d (admin_listen, or listen without it)", pr.name, cp.ContainerPort, probePort)
		}
	}

	// Graceful drain: a preStop sleep, then SIGTERM and
	// limits.shutdown_grace_period, all within the termination grace period.
	grace := 30 * time.Second // serve's default
	if s := cfg.str("limits.shutdown_grace_period"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Errorf("limits.shutdown_grace_period: %v", err)
		}
		grace = d
	}
	var sleep int64
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds <= 0 {
		t.Errorf("container %s: want a preStop sleep so endpoints drain before SIGTERM", c.Name)
	} else {
		sleep = c.Lifecycle.PreStop.Sleep.Seconds
	}
	if tg := pod.Spec.TerminationGracePeriodSeconds; tg == nil || time.Duration(*tg)*time.Second <= time.Duration(sleep)*time.Second+grace {
		got := "unset (30)"
		if tg != nil {
			got = strconv.FormatInt(*tg, 10)
		}
		t.Errorf("terminationGracePeriodSeconds %s must exceed the preStop sleep (%ds) plus limits.shutdown_grace_period (%s)", got, sleep, grace)
	}

	// ServiceAccount (IRSA).
	if sa := pod.Spec.ServiceAccountName; sa == "" || r.sas[sa] == nil {
		t.Errorf("serviceAccountName %q is not a ServiceAccount of the build", sa)
	} else if !strings.HasPrefix(r.sas[sa].Annotations["eks.amazonaws.com/role-arn"], "arn:aws:iam::") {
		t.Errorf("ServiceAccount %s: no IRSA annotation eks.amazonaws.com/role-arn", sa)
	}

	// Services: select the pods, target container ports.
	var headless *corev1.Service
	var signService bool
	for _, s := range r.services {
		if !selects(t, &metav1.LabelSelector{MatchLabels: s.Spec.Selector}, podLabels) {
			t.Errorf("Service %s: selector %v does not select the pods (%v)", s.Name, s.Spec.Selector, podLabels)
		}
		for _, p := range s.Spec.Ports {
			cp, ok := resolve("Service "+s.Name+" port "+p.Name, p.TargetPort)
			if ok && cp.Protocol != p.Protocol {
				t.Errorf("Service %s port %s: protocol %s, container port %s", s.Name, p.Name, p.Protocol, cp.Protocol)
			}
			if ok && cp.ContainerPort == signPort && s.Spec.ClusterIP != corev1.ClusterIPNone {
				signService = true
			}
		}
		if s.Name == sts.Spec.ServiceName {
			headless = s
		}
	}
	if headless == nil || headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("StatefulSet serviceName %q is not a headless Service of the build", sts.Spec.ServiceName)
	}
	if !signService {
		t.Errorf("no ClusterIP Service reaches the sign port %d", signPort)
	}

	// HorizontalPodAutoscaler on CPU, owning the replica count.
	if len(r.hpas) != 1 {
		t.Errorf("%d HorizontalPodAutoscalers, want 1", len(r.hpas))
	}
	var minReplicas int32 = 1
	for _, h := range r.hpas {
		ref := h.Spec.ScaleTargetRef
		if ref.APIVersion != "apps/v1" || ref.Kind != "StatefulSet" || ref.Name != sts.Name {
			t.Errorf("HPA %s targets %s %s %s, not the StatefulSet %s", h.Name, ref.APIVersion, ref.Kind, ref.Name, sts.Name)
		}
		cpu := false
		for _, m := range h.Spec.Metrics {
			if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
				m.Resource.Target.Type == autoscalingv2.UtilizationMetricType && m.Resource.Target.AverageUtilization != nil {
				cpu = true
			}
		}
		if !cpu {
			t.Errorf("HPA %s does not scale on CPU utilization", h.Name)
		}
		if h.Spec.MinReplicas != nil {
			minReplicas = *h.Spec.MinReplicas
		}
		if minReplicas < 2 || h.Spec.MaxReplicas < minReplicas {
			t.Errorf("HPA %s: minReplicas %d (want >= 2), maxReplicas %d", h.Name, minReplicas, h.Spec.MaxReplicas)
		}
		if sts.Spec.Replicas != nil {
			t.Errorf("StatefulSet %s sets replicas: the HPA %s owns the count", sts.Name, h.Name)
		}
	}
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
		t.Errorf("container %s has no CPU request: the HPA's utilization needs one", c.Name)
	}

	// PodDisruptionBudget.
	if len(r.pdbs) != 1 {
		t.Errorf("%d PodDisruptionBudgets, want 1", len(r.pdbs))
	}
	for _, p := range r.pdbs {
		if !selects(t, p.Spec.Selector, podLabels) {
			t.Errorf("PDB %s does not select the pods", p.Name)
		}
		switch {
		case p.Spec.MaxUnavailable != nil:
			if p.Spec.MaxUnavailable.Type == intstr.Int && (p.Spec.MaxUnavailable.IntVal < 1 || p.Spec.MaxUnavailable.IntVal >= minReplicas) {
				t.Errorf("PDB %s: maxUnavailable %s with at least %d replicas", p.Name, p.Spec.MaxUnavailable, minReplicas)
			}
		case p.Spec.MinAvailable != nil:
			if p.Spec.MinAvailable.Type == intstr.Int && p.Spec.MinAvailable.IntVal >= minReplicas {
				t.Errorf("PDB %s: minAvailable %s blocks every eviction at %d replicas", p.Name, p.Spec.MinAvailable, minReplicas)
			}
		default:
			t.Errorf("PDB %s sets neither maxUnavailable nor minAvailable", p.Name)
		}
	}

	checkNetworkPolicy(t, r, podLabels, signPort, probePort, resolve)
	checkServiceMonitor(t, r, probePort)
	return cfg
}

func checkPodSecurity(t *testing.T, sts *appsv1.StatefulSet, c *corev1.Container) {
	ps := sts.Spec.Template.Spec.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser == 0 {
		t.Errorf("pod securityContext must set runAsNonRoot and a non-zero runAsUser")
	}
	if ps == nil || ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext: want seccompProfile RuntimeDefault")
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Errorf("container %s has no securityContext", c.Name)
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("container %s: want readOnlyRootFilesystem", c.Name)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("container %s: want allowPrivilegeEscalation false", c.Name)
	case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0:
		t.Errorf("container %s: want capabilities drop [ALL] and none added", c.Name)
	case sc.Privileged != nil && *sc.Privileged:
		t.Errorf("container %s is privileged", c.Name)
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[res]; !ok {
			t.Errorf("container %s has no %s request", c.Name, res)
		}
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Errorf("container %s has no memory limit", c.Name)
	}
	repo, tag, _ := strings.Cut(c.Image, ":")
	if path.Base(repo) != imageName || tag == "" {
		t.Errorf("container %s image %q: want %s:TAG", c.Name, c.Image, imageName)
	}
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Errorf("container %s args %q: want serve -config FILE", c.Name, c.Args)
	}
}

// config is a countersign configuration, decoded generically (its strict
// validation is countersign's own, through config check).
type config map[string]any

func (c config) get(key string) any {
	var v any = map[string]any(c)
	for _, k := range strings.Split(key, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func (c config) str(key string) string {
	s, _ := c.get(key).(string)
	return s
}

func portOf(t *testing.T, key, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Errorf("%s %q: %v", key, addr, err)
		return 0
	}
	n, err := strconv.ParseInt(p, 10, 32)
	if err != nil {
		t.Errorf("%s %q: port: %v", key, addr, err)
	}
	return int32(n)
}

// checkConfigAndMounts follows the container's -config flag to the
// ConfigMap that holds the configuration, runs "countersign config check"
// on it, and checks every file the configuration names against the
// volumes: mounted, and present in the ConfigMap or (documented) Secret
// behind the mount. The policy ConfigMap is compiled and evaluated.
func checkConfigAndMounts(t *testing.T, r *rendered, sts *appsv1.StatefulSet, c *corev1.Container, exampleSecrets map[string][]string) config {
	spec := &sts.Spec.Template.Spec
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
		switch {
		case v.ConfigMap != nil:
			if r.cms[v.ConfigMap.Name] == nil {
				t.Errorf("volume %s: ConfigMap %s is not in the build", v.Name, v.ConfigMap.Name)
			}
		case v.Secret != nil:
			if _, ok := exampleSecrets[v.Secret.SecretName]; !ok && r.secrets[v.Secret.SecretName] == nil && (v.Secret.Optional == nil || !*v.Secret.Optional) {
				t.Errorf("volume %s: Secret %s is neither in the build nor documented in %s", v.Name, v.Secret.SecretName, exampleSecretsFile)
			}
		}
	}
	claims := map[string]bool{}
	for _, pvc := range sts.Spec.VolumeClaimTemplates {
		claims[pvc.Name] = true
	}
	if len(claims) == 0 {
		t.Errorf("StatefulSet %s has no volumeClaimTemplates: each replica needs its own audit volume", sts.Name)
	}
	claimMounted := false
	for _, m := range c.VolumeMounts {
		_, isVol := volumes[m.Name]
		if !isVol && !claims[m.Name] {
			t.Errorf("volumeMount %s (%s) names no volume or volumeClaimTemplate", m.Name, m.MountPath)
		}
		if claims[m.Name] && !m.ReadOnly {
			claimMounted = true
		}
		if v, ok := volumes[m.Name]; ok && (v.ConfigMap != nil || v.Secret != nil) && !m.ReadOnly {
			t.Errorf("volumeMount %s: ConfigMaps and Secrets are mounted readOnly", m.Name)
		}
	}
	if !claimMounted {
		t.Errorf("no volumeClaimTemplate is mounted read-write (the audit directory)")
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		keys, documented := exampleSecrets[ref.Name]
		if r.secrets[ref.Name] == nil && (!documented || !slices.Contains(keys, ref.Key)) {
			t.Errorf("env %s: Secret %s key %s is neither in the build nor documented in %s", e.Name, ref.Name, ref.Key, exampleSecretsFile)
		}
		if !strings.HasPrefix(e.Name, "COUNTERSIGN_") {
			t.Errorf("env %s from a Secret: countersign reads secrets from COUNTERSIGN_* variables only", e.Name)
		}
	}
	for _, e := range c.EnvFrom {
		t.Errorf("envFrom %v: list secret variables one by one", e)
	}

	// mountFor finds the mount holding p, and p relative to it.
	mountFor := func(key, p string) (corev1.VolumeMount, string, bool) {
		var best corev1.VolumeMount
		found := false
		for _, m := range c.VolumeMounts {
			if (p == m.MountPath || strings.HasPrefix(p, strings.TrimSuffix(m.MountPath, "/")+"/")) && len(m.MountPath) > len(best.MountPath) {
				best, found = m, true
			}
		}
		if !found {
			t.Errorf("%s %s is on no volume of the container (the root file system is read-only and empty)", key, p)
			return best, "", false
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, best.MountPath), "/")
		return best, rel, true
	}
	// fileIn checks that file rel of mount m exists, as far as the build
	// knows, and returns its content when it is in a ConfigMap.
	fileIn := func(key string, m corev1.VolumeMount, rel string) (string, bool) {
		if m.SubPath != "" {
			t.Errorf("%s: volumeMount %s uses subPath, which never sees ConfigMap updates", key, m.Name)
		}
		v := volumes[m.Name]
		switch {
		case v.ConfigMap != nil:
			cm := r.cms[v.ConfigMap.Name]
			if cm == nil {
				return "", false
			}
			data, ok := cm.Data[rel]
			if !ok {
				t.Errorf("%s: ConfigMap %s (mounted at %s) has no key %q; it has %v", key, cm.Name, m.MountPath, rel, sortedKeys(cm.Data))
			}
			return data, ok
		case v.Secret != nil:
			if keys, ok := exampleSecrets[v.Secret.SecretName]; ok && !slices.Contains(keys, rel) {
				t.Errorf("%s: Secret %s (mounted at %s) is documented without key %q", key, v.Secret.SecretName, m.MountPath, rel)
			}
		}
		return "", false
	}

	// The configuration file.
	cfgPath := ""
	for i, a := range c.Args {
		if (a == "-config" || a == "--config") && i+1 < len(c.Args) {
			cfgPath = c.Args[i+1]
		} else if v, ok := strings.CutPrefix(a, "-config="); ok {
			cfgPath = v
		}
	}
	if cfgPath == "" {
		t.Fatalf("container %s: no -config FILE in args %q", c.Name, c.Args)
	}
	m, rel, ok := mountFor("-config", cfgPath)
	if !ok || volumes[m.Name].ConfigMap == nil {
		t.Fatalf("-config %s is not in a ConfigMap volume", cfgPath)
	}
	text, ok := fileIn("-config", m, rel)
	if !ok {
		t.FailNow()
	}
	configCheck(t, text)
	var cfg config
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("configuration: %v", err)
	}

	// Every file and directory the configuration names.
	var paths []struct{ key, path string }
	add := func(key string) {
		if s := cfg.str(key); s != "" {
			paths = append(paths, struct{ key, path string }{key, s})
		}
	}
	if ps, ok := cfg.get("policy.paths").([]any); ok {
		for i, p := range ps {
			if s, ok := p.(string); ok {
				paths = append(paths, struct{ key, path string }{fmt.Sprintf("policy.paths[%d]", i), s})
			}
		}
	}
	for _, k := range []string{"policy.bundle.file", "policy.bundle.verification.public_key_file", "tls.cert_file", "tls.key_file", "tls.client_ca_file", "auth.jwks_file", "audit.dir", "audit.checkpoint_key_file", "audit.hmac_key_file"} {
		add(k)
	}
	for _, p := range paths {
		m, rel, ok := mountFor(p.key, p.path)
		if !ok {
			continue
		}
		v := volumes[m.Name]
		switch {
		case p.key == "audit.dir":
			if !claims[m.Name] || m.ReadOnly {
				t.Errorf("audit.dir %s must be on a read-write volumeClaimTemplate, not %s", p.path, m.Name)
			}
		case rel == "" && v.ConfigMap != nil:
			// A directory: the whole ConfigMap (policy.paths).
			cm := r.cms[v.ConfigMap.Name]
			if cm != nil && strings.HasPrefix(p.key, "policy.paths") {
				checkPolicyConfigMap(t, cm)
			}
		case rel == "":
			// A directory on another kind of volume.
		default:
			data, ok := fileIn(p.key, m, rel)
			if ok && p.key == "policy.bundle.verification.public_key_file" {
				if alg := cfg.str("policy.bundle.verification.algorithm"); !strings.HasPrefix(alg, "HS") {
					if err := checkPEMPublicKey(data); err != nil {
						t.Errorf("%s: %v", p.key, err)
					}
				}
			}
		}
	}
	return cfg
}

// checkPolicyConfigMap compiles and evaluates the policy exactly as it is
// mounted, and checks that countersign-policy carries all of
// deploy/policies/lib and deploy/policies/combined.
func checkPolicyConfigMap(t *testing.T, cm *corev1.ConfigMap) {
	dir := t.TempDir()
	for k, v := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	policyEval(t, dir)
	if cm.Name != policyConfigMap {
		return
	}
	var want []string
	from := map[string]string{} // file name -> source directory
	for _, src := range policySources {
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			n := e.Name()
			switch filepath.Ext(n) {
			case ".rego", ".json", ".yaml", ".yml":
				if strings.HasSuffix(n, "_test.rego") {
					continue
				}
				if other, ok := from[n]; ok {
					t.Errorf("%s is in %s and %s: one ConfigMap directory cannot hold both", n, other, src)
				}
				from[n] = src
				want = append(want, n)
			}
		}
	}
	got := sortedKeys(cm.Data)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ConfigMap %s has %v, but %v have %v: update deploy/policies/kustomization.yaml", cm.Name, got, policySources, want)
	}
	for _, n := range want {
		got, ok := cm.Data[n]
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from[n], n))
		if err == nil && string(b) != got {
			t.Errorf("ConfigMap %s: %s differs from %s", cm.Name, n, filepath.Join(from[n], n))
		}
	}
}

func checkNetworkPolicy(t *testing.T, r *rendered, podLabels map[string]string, signPort, adminPort int32, resolve func(string, intstr.IntOrString) (corev1.ContainerPort, bool)) {
	if len(r.nps) != 1 {
		t.Errorf("%d NetworkPolicies, want 1", len(r.nps))
	}
	for _, np := range r.nps {
		if !selects(t, &np.Spec.PodSelector, podLabels) {
			t.Errorf("NetworkPolicy %s does not select the pods", np.Name)
		}
		if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			t.Errorf("NetworkPolicy %s: policyTypes %v, want Ingress and Egress", np.Name, np.Spec.PolicyTypes)
		}
		signFromLabelled := false
		for i, rule := range np.Spec.Ingress {
			if len(rule.From) == 0 {
				t.Errorf("NetworkPolicy %s ingress[%d] allows every source", np.Name, i)
			}
			if len(rule.Ports) == 0 {
				t.Errorf("NetworkPolicy %s ingress[%d] allows every port", np.Name, i)
			}
			for _, p := range rule.Ports {
				if p.Port == nil {
					t.Errorf("NetworkPolicy %s ingress[%d]: a port without number", np.Name, i)
					continue
				}
				cp, ok := resolve(fmt.Sprintf("NetworkPolicy %s ingress[%d]", np.Name, i), *p.Port)
				if !ok {
					continue
				}
				if cp.ContainerPort != signPort && cp.ContainerPort != adminPort {
					t.Errorf("NetworkPolicy %s ingress[%d] opens port %d", np.Name, i, cp.ContainerPort)
				}
				if cp.ContainerPort == signPort {
					for _, f := range rule.From {
						if f.NamespaceSelector == nil || len(f.NamespaceSelector.MatchLabels)+len(f.NamespaceSelector.MatchExpressions) == 0 || f.IPBlock != nil {
							t.Errorf("NetworkPolicy %s ingress[%d]: the sign port must be open only to labelled namespaces", np.Name, i)
						} else {
							signFromLabelled = true
						}
					}
				}
			}
		}
		if !signFromLabelled {
			t.Errorf("NetworkPolicy %s: no ingress to the sign port %d from labelled engine namespaces", np.Name, signPort)
		}
		egress := map[string]bool{}
		for i, rule := range np.Spec.Egress {
			if len(rule.Ports) == 0 {
				t.Errorf("NetworkPolicy %s egress[%d] allows every port", np.Name, i)
			}
			for _, p := range rule.Ports {
				proto := corev1.ProtocolTCP
				if p.Protocol != nil {
					proto = *p.Protocol
				}
				if p.Port != nil {
					egress[fmt.Sprintf("%s/%s", proto, p.Port.String())] = true
				}
			}
		}
		for _, want := range []string{"UDP/53", "TCP/53", "TCP/443"} {
			if !egress[want] {
				t.Errorf("NetworkPolicy %s: no egress to %s (have %v)", np.Name, want, sortedKeys(egress))
			}
		}
	}
}

func checkServiceMonitor(t *testing.T, r *rendered, metricsPort int32) {
	if len(r.sms) != 1 {
		t.Errorf("%d ServiceMonitors, want 1", len(r.sms))
	}
	for _, sm := range r.sms {
		var matched []*corev1.Service
		for _, s := range r.services {
			if s.Namespace == sm.Namespace && selects(t, &sm.Spec.Selector, s.Labels) {
				matched = append(matched, s)
			}
		}
		if len(matched) != 1 {
			t.Errorf("ServiceMonitor %s selects %d Services, want exactly 1 (each pod scraped once)", sm.Name, len(matched))
			continue
		}
		svc := matched[0]
		if svc.Spec.ClusterIP != corev1.ClusterIPNone {
			t.Errorf("ServiceMonitor %s scrapes Service %s; the headless Service lists every pod", sm.Name, svc.Name)
		}
		if len(sm.Spec.Endpoints) == 0 {
			t.Errorf("ServiceMonitor %s has no endpoints", sm.Name)
		}
		for _, ep := range sm.Spec.Endpoints {
			var port *corev1.ServicePort
			for i := range svc.Spec.Ports {
				if svc.Spec.Ports[i].Name == ep.Port {
					port = &svc.Spec.Ports[i]
				}
			}
			if port == nil {
				t.Errorf("ServiceMonitor %s endpoint port %q is no port of Service %s", sm.Name, ep.Port, svc.Name)
				continue
			}
			if port.Port != metricsPort {
				t.Errorf("ServiceMonitor %s scrapes port %d, want the admin listener's %d", sm.Name, port.Port, metricsPort)
			}
			if ep.Path != metricsPath {
				t.Errorf("ServiceMonitor %s endpoint path %q, want %s", sm.Name, ep.Path, metricsPath)
			}
			if ep.Scheme != nil && ep.Scheme.String() != "http" && ep.Scheme.String() != "https" {
				t.Errorf("ServiceMonitor %s endpoint scheme %q", sm.Name, ep.Scheme.String())
			}
			for _, d := range []monitoringv1.Duration{ep.Interval, ep.ScrapeTimeout} {
				if d != "" {
					if _, err := time.ParseDuration(string(d)); err != nil {
						t.Errorf("ServiceMonitor %s: duration %q: %v", sm.Name, d, err)
					}
				}
			}
		}
	}
}
