package coord_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkcrawl/zkcrawl/coord"
)

func TestWithAuth(t *testing.T) {
	o, err := coord.WithAuth("digest:crawler:pa:ss")
	if err != nil {
		t.Fatalf("WithAuth: %v", err)
	}
	if scheme, cred := coord.AuthOf(o); scheme != "digest" || string(cred) != "crawler:pa:ss" {
		t.Errorf("WithAuth = %s %q", scheme, cred)
	}
	for in, want := range map[string]string{
		"":                "SCHEME:CREDENTIALS",
		"digest":          "SCHEME:CREDENTIALS",
		"sasl:bob":        "only digest",
		"digest:bob":      "USER:PASSWORD",
		"digest::secret":  "USER:PASSWORD",
		"digest:bob:":     "USER:PASSWORD",
		":digest:bob:pwd": "SCHEME:CREDENTIALS",
	} {
		_, err := coord.WithAuth(in)
		if err == nil || !errors.Is(err, coord.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("WithAuth(%q) = %v, want an invalid-argument error about %s", in, err, want)
		}
		if err != nil && strings.Contains(in, "secret") && strings.Contains(err.Error(), "secret") {
			t.Errorf("WithAuth(%q) error shows the credentials: %v", in, err)
		}
	}
}
