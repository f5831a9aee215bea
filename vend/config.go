package vend

import (
	"fmt"
	"time"
)

// Defaults of Config.
const (
	// DefaultMaxDuration is the longest a vended credential lasts unless
	// configured otherwise: a prefix for minutes is what a vended
	// credential trades for an engine that cannot sign.
	DefaultMaxDuration = 15 * time.Minute
	// DefaultMinDuration is STS AssumeRole's shortest session (900 s).
	DefaultMinDuration = 15 * time.Minute
)

// Config bounds vended credentials (the configuration's vending section).
type Config struct {
	// MaxDuration caps a credential's lifetime (default 15 min); a longer
	// request is shortened to it.
	MaxDuration time.Duration `yaml:"max_duration"`
	// MinDuration is the shortest lifetime the STS accepts (default 15
	// min, AssumeRole's minimum): a caller whose token expires sooner is
	// refused (401: refresh the token), since the credentials must never
	// outlive the token that asked for them.
	MinDuration time.Duration `yaml:"min_duration"`
	// Region and Endpoint, when set, are handed to Iceberg clients with
	// the credentials (client.region, s3.endpoint).
	Region   string `yaml:"region"`
	Endpoint string `yaml:"endpoint"`
}

func (c *Config) setDefaults() {
	if c.MaxDuration <= 0 {
		c.MaxDuration = DefaultMaxDuration
	}
	if c.MinDuration <= 0 {
		c.MinDuration = DefaultMinDuration
	}
}

// Validate names the setting that is wrong.
func (c Config) Validate() error {
	c.setDefaults()
	if c.MinDuration > c.MaxDuration {
		return fmt.Errorf("vending.min_duration %v is longer than vending.max_duration %v", c.MinDuration, c.MaxDuration)
	}
	if c.MaxDuration > 12*time.Hour {
		return fmt.Errorf("vending.max_duration %v: STS sessions last at most 12h", c.MaxDuration)
	}
	return nil
}

// lifetime bounds a requested lifetime (0: the maximum) by the
// configuration and by the token's expiry (zero: none). ok is false when
// the token expires before the shortest lifetime the STS accepts.
func (c *Config) lifetime(requested time.Duration, tokenExpires, now time.Time) (d time.Duration, ok bool) {
	d = c.MaxDuration
	if requested > 0 && requested < d {
		d = requested
	}
	d = max(d, c.MinDuration)
	if !tokenExpires.IsZero() {
		left := tokenExpires.Sub(now).Truncate(time.Second)
		if left < d {
			d = left
		}
	}
	return d, d >= c.MinDuration
}
