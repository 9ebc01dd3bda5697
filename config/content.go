package config

import (
	"fmt"
	"strings"
)

// MIMEPattern is one entry of accept_mime, reject_mime or a
// max_body_bytes_rules rule: a media type "type/subtype" (RFC 9110 section
// 8.3.1) where either part may be "*" ("image/*", "*/*"; "*/html" is
// refused, as in an Accept header). It is compared case-insensitively
// with the media type of a Content-Type, parameters ignored. Build it with
// ParseMIMEPattern; the zero value matches nothing.
type MIMEPattern struct {
	typ, sub string // lower case; "*" is a wildcard
}

// ParseMIMEPattern parses s ("text/html", "image/*", "*/*"; spaces around
// it are ignored, parameters are not allowed). It returns an error naming s
// and the reason for anything else: no "/" ("text"), more than one
// ("a/b/c"), an empty part, a character that is not an RFC 9110 token
// character, or "*/subtype".
func ParseMIMEPattern(s string) (MIMEPattern, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	typ, sub, ok := strings.Cut(t, "/")
	switch {
	case !ok:
		return MIMEPattern{}, fmt.Errorf("MIME pattern %q: want type/subtype (e.g. text/html, image/*, */*)", s)
	case strings.Contains(sub, "/"):
		return MIMEPattern{}, fmt.Errorf("MIME pattern %q: more than one \"/\"", s)
	case !isToken(typ) || !isToken(sub):
		return MIMEPattern{}, fmt.Errorf("MIME pattern %q: type and subtype must be non-empty tokens (RFC 9110 section 5.6.2) or *", s)
	case typ == "*" && sub != "*":
		return MIMEPattern{}, fmt.Errorf("MIME pattern %q: a wildcard type needs a wildcard subtype (*/*)", s)
	}
	return MIMEPattern{typ: typ, sub: sub}, nil
}

// Match reports whether mediaType ("text/html", any case, no parameters:
// the media type of a Content-Type) matches p.
func (p MIMEPattern) Match(mediaType string) bool {
	if p.typ == "" {
		return false
	}
	typ, sub, ok := strings.Cut(strings.ToLower(strings.TrimSpace(mediaType)), "/")
	return ok && (p.typ == "*" || p.typ == typ) && (p.sub == "*" || p.sub == sub)
}

// String returns the pattern in canonical (lower-case) form.
func (p MIMEPattern) String() string { return p.typ + "/" + p.sub }

// isToken reports whether s is an RFC 9110 token ("*" is one).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

// BodyRule is one entry of Config.MaxBodyBytesRules: a response whose
// media type matches MIME (a MIMEPattern) has its body capped at MaxBytes
// bytes as transferred, instead of max_body_bytes.
type BodyRule struct {
	MIME     string `json:"mime"`
	MaxBytes int64  `json:"max_bytes"`
}

// MaxMIMERules bounds accept_mime, reject_mime and max_body_bytes_rules,
// each.
const MaxMIMERules = 100

// MIMEPatterns parses every entry of list (ParseMIMEPattern); the error
// names the entry's index.
func MIMEPatterns(list []string) ([]MIMEPattern, error) {
	out := make([]MIMEPattern, 0, len(list))
	for i, s := range list {
		p, err := ParseMIMEPattern(s)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// validateContent checks the content-rule keys (accept_mime, reject_mime,
// max_body_bytes_rules), with bad naming the key.
func (c Config) validateContent(bad func(key, format string, args ...any) error) error {
	for key, list := range map[string][]string{"accept_mime": c.AcceptMIME, "reject_mime": c.RejectMIME} {
		if len(list) > MaxMIMERules {
			return bad(key, "%d patterns, at most %d", len(list), MaxMIMERules)
		}
		if _, err := MIMEPatterns(list); err != nil {
			return bad(key, "%v", err)
		}
	}
	if len(c.MaxBodyBytesRules) > MaxMIMERules {
		return bad("max_body_bytes_rules", "%d rules, at most %d", len(c.MaxBodyBytesRules), MaxMIMERules)
	}
	for i, r := range c.MaxBodyBytesRules {
		if _, err := ParseMIMEPattern(r.MIME); err != nil {
			return bad("max_body_bytes_rules", "rule %d: %v", i, err)
		}
		if r.MaxBytes < MinMaxBodyBytes || r.MaxBytes > MaxMaxBodyBytes {
			return bad("max_body_bytes_rules", "rule %d (%q): max_bytes %d is outside %d..%d, as max_body_bytes",
				i, r.MIME, r.MaxBytes, MinMaxBodyBytes, MaxMaxBodyBytes)
		}
	}
	return nil
}

// The range of max_body_bytes and of a max_body_bytes_rules max_bytes, in
// bytes: 1 KiB to 1 GiB.
const (
	MinMaxBodyBytes = 1024
	MaxMaxBodyBytes = 1 << 30
)
