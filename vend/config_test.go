package vend

import (
	"strings"
	"testing"
	"time"
)

// TestLifetime: a credential lasts the configured maximum or less if
// asked, never less than the STS's minimum, and never longer than the
// token that asked; a token expiring before the minimum is refused.
func TestLifetime(t *testing.T) {
	now := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	c := Config{MaxDuration: 15 * time.Minute, MinDuration: time.Minute}
	for _, tc := range []struct {
		name      string
		requested time.Duration
		token     time.Time
		want      time.Duration
		ok        bool
	}{
		{"default is the maximum", 0, time.Time{}, 15 * time.Minute, true},
		{"longer request capped", 2 * time.Hour, time.Time{}, 15 * time.Minute, true},
		{"shorter request kept", 5 * time.Minute, time.Time{}, 5 * time.Minute, true},
		{"below the STS minimum raised", 10 * time.Second, time.Time{}, time.Minute, true},
		{"token expiring sooner bounds it", 0, now.Add(7*time.Minute + 500*time.Millisecond), 7 * time.Minute, true},
		{"token expiring later does not", 0, now.Add(time.Hour), 15 * time.Minute, true},
		{"token expiring before the minimum refused", 0, now.Add(30 * time.Second), 30 * time.Second, false},
		{"expired token refused", 0, now.Add(-time.Minute), -time.Minute, false},
	} {
		got, ok := c.lifetime(tc.requested, tc.token, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: lifetime = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for cfg, want := range map[Config]string{
		{MaxDuration: 10 * time.Minute}:                                "vending.min_duration",
		{MaxDuration: 13 * time.Hour}:                                  "vending.max_duration",
		{MaxDuration: 20 * time.Minute, MinDuration: 30 * time.Minute}: "vending.min_duration",
	} {
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want an error naming %s", cfg, err, want)
		}
	}
	c := Config{}
	c.setDefaults()
	if c.MaxDuration != 15*time.Minute || c.MinDuration != 15*time.Minute {
		t.Fatalf("defaults %+v, want 15 min each", c)
	}
}
