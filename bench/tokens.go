package bench

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// GroupName is the group of bench principal i's grants when there are
// groups groups: gen-grants writes grants for these names, and MintHS256
// puts principal i in GroupName(i % groups).
func GroupName(i int) string { return "bench-g" + strconv.Itoa(i) }

// PrincipalName is the subject of bench principal i.
func PrincipalName(i int) string { return "bench-p" + strconv.Itoa(i) }

// MintOptions are the claims of minted development tokens.
type MintOptions struct {
	Secret   string // HS256 secret (auth.hs256_secret)
	Issuer   string
	Audience []string
	// Principals is the number of tokens, one per principal.
	Principals int
	// Groups spreads the principals over this many groups (>= 1).
	Groups int
	// TTL is the tokens' lifetime.
	TTL time.Duration
}

// MintHS256 signs one token per principal for countersign's development
// HS256 mode: sub bench-p<i>, groups [bench-g<i % Groups>], a jti.
func MintHS256(o MintOptions) ([]string, error) {
	if len(o.Secret) < 32 {
		return nil, fmt.Errorf("bench: the HS256 secret must be at least 32 bytes (countersign refuses shorter ones)")
	}
	if o.Principals < 1 || o.Groups < 1 {
		return nil, fmt.Errorf("bench: principals and groups must be at least 1")
	}
	if o.TTL <= 0 {
		o.TTL = 2 * time.Hour
	}
	now := time.Now()
	tokens := make([]string, o.Principals)
	for i := range tokens {
		var jti [12]byte
		if _, err := rand.Read(jti[:]); err != nil {
			return nil, err
		}
		b := jwt.NewBuilder().
			Subject(PrincipalName(i)).
			IssuedAt(now).
			Expiration(now.Add(o.TTL)).
			JwtID(hex.EncodeToString(jti[:])).
			Claim("groups", []string{GroupName(i % o.Groups)})
		if o.Issuer != "" {
			b = b.Issuer(o.Issuer)
		}
		if len(o.Audience) > 0 {
			b = b.Audience(o.Audience)
		}
		tok, err := b.Build()
		if err != nil {
			return nil, err
		}
		signed, err := jwt.Sign(tok, jwt.WithKey(jwa.HS256(), []byte(o.Secret)))
		if err != nil {
			return nil, fmt.Errorf("bench: minting a token: %w", err)
		}
		tokens[i] = string(signed)
	}
	return tokens, nil
}

// ReadTokenFile reads bearer tokens, one per line; blank lines and lines
// starting with # are skipped.
func ReadTokenFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var tokens []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		tokens = append(tokens, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%s: no tokens", path)
	}
	return tokens, nil
}
