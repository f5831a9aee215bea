package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Every level of subcommands answers alike: usage and exit 2 without a
// name or with an unknown one (which the message names), usage on stdout
// and exit 0 for help.
func TestCommandLevelsAnswerAlike(t *testing.T) {
	for prefix, usageLine := range map[string]string{
		"":       "countersign serve",
		"policy": "countersign policy eval",
		"config": "countersign config check",
		"audit":  "countersign audit verify-proof",
	} {
		args := strings.Fields(prefix)
		call := func(extra ...string) (int, string, string) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), append(append([]string{}, args...), extra...), &out, &errOut)
			return code, out.String(), errOut.String()
		}
		if prefix != "" { // "countersign" alone is the same as no args
			if code, _, errOut := call(); code != 2 || !strings.Contains(errOut, usageLine) {
				t.Errorf("%q without a subcommand: exit %d, stderr %q", prefix, code, errOut)
			}
		}
		if code, out, _ := call("help"); code != 0 || !strings.Contains(out, usageLine) {
			t.Errorf("%q help: exit %d, stdout %q", prefix, code, out)
		}
		if code, _, errOut := call("frobnicate"); code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) || !strings.Contains(errOut, usageLine) {
			t.Errorf("%q frobnicate: exit %d, stderr %q", prefix, code, errOut)
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "countersign serve") {
		t.Errorf("no command: exit %d, stderr %q", code, errOut.String())
	}
}
