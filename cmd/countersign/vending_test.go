package main

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/vend"
)

// TestVendingConfig: vending off needs nothing; on, it needs the role and
// bounds that make sense, and errors name the key.
func TestVendingConfig(t *testing.T) {
	var v VendingConfig
	if err := v.validate(); err != nil {
		t.Fatalf("vending off: %v", err)
	}
	for name, c := range map[string]struct {
		cfg  VendingConfig
		want string
	}{
		"no role":       {VendingConfig{Enabled: true}, "vending.role_arn"},
		"min above max": {VendingConfig{Enabled: true, RoleARN: "arn:aws:iam::1:role/r", Config: vend.Config{MaxDuration: 20 * time.Minute, MinDuration: 30 * time.Minute}}, "vending.min_duration"},
		"over 12h":      {VendingConfig{Enabled: true, RoleARN: "arn:aws:iam::1:role/r", Config: vend.Config{MaxDuration: 24 * time.Hour}}, "vending.max_duration"},
	} {
		if err := c.cfg.validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", name, err, c.want)
		}
	}
	ok := VendingConfig{Enabled: true, RoleARN: "arn:aws:iam::1:role/r"}
	if err := ok.validate(); err != nil {
		t.Fatalf("a complete vending section: %v", err)
	}
	cfg, err := loadConfig("../../deploy/countersign.example.yaml", Config{})
	if err != nil || cfg.Vending.Enabled || cfg.Vending.MaxDuration != 15*time.Minute || cfg.Vending.RoleARN == "" {
		t.Fatalf("the example's vending section: %+v %v", cfg.Vending, err)
	}
}
