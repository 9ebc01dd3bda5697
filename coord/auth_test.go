package coord_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkcrawl/zkcrawl/coord"
)

func TestParseAuth(t *testing.T) {
	a, err := coord.ParseAuth("digest:crawler:pa:ss")
	if err != nil || a.Scheme != "digest" || string(a.Credentials) != "crawler:pa:ss" {
		t.Errorf("ParseAuth = %+v, %v", a, err)
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
		_, err := coord.ParseAuth(in)
		if err == nil || !errors.Is(err, coord.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAuth(%q) = %v, want an invalid-argument error about %s", in, err, want)
		}
		if err != nil && strings.Contains(in, "secret") && strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseAuth(%q) error shows the credentials: %v", in, err)
		}
	}
}
