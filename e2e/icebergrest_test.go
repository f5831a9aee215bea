package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/testsupport"
)

// startIcebergREST runs Iceberg's reference REST catalog server
// (org.apache.iceberg.rest.RESTCatalogServer, the server of the
// apache/iceberg-rest-fixture image) from Iceberg's published artifacts,
// resolved by Maven from ../tools/iceberg-rest/pom.xml, with an in-memory
// catalog and FileIO, on a free loopback port; it returns its base URI.
func startIcebergREST(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("Iceberg's reference REST catalog needs %s on PATH: %v", tool, err)
		}
	}
	pom, err := filepath.Abs("../tools/iceberg-rest")
	if err != nil {
		t.Fatal(err)
	}
	cpFile := filepath.Join(t.TempDir(), "classpath")
	resolve := func(offline bool) ([]byte, error) {
		args := []string{"-q", "-B", "dependency:build-classpath", "-Dmdep.outputFile=" + cpFile}
		if offline {
			args = append([]string{"-o"}, args...)
		}
		cmd := exec.Command("mvn", args...)
		cmd.Dir = pom
		return cmd.CombinedOutput()
	}
	if _, err := resolve(true); err != nil {
		if out, err := resolve(false); err != nil {
			t.Fatalf("resolving Iceberg's REST catalog server with Maven: %v\n%s", err, out)
		}
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		t.Fatal(err)
	}
	port := testsupport.FreePort(t)
	cmd := exec.Command("java", "-cp", strings.TrimSpace(string(cp)), "org.apache.iceberg.rest.RESTCatalogServer")
	cmd.Env = append(os.Environ(),
		"CATALOG_REST_PORT="+strconv.Itoa(port),
		"CATALOG_CATALOG__IMPL=org.apache.iceberg.inmemory.InMemoryCatalog",
		"CATALOG_WAREHOUSE=s3://lake/")
	var log testsupport.LockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if resp, err := http.Get(base + "/v1/config"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Iceberg's REST catalog server did not start:\n%s", log.String())
		}
	}
}
