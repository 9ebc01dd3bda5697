package coord_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zkcrawl/zkcrawl/coord"
)

// Bad Config credentials are refused before any connection, naming the
// problem and never the password.
func TestConnectCredentials(t *testing.T) {
	for _, tc := range []struct {
		user, pass, want string
	}{
		{"bob", "", "both Username and Password"},
		{"", "secret", "both Username and Password"},
		{"bo:b", "secret", "must not contain ':'"},
	} {
		c, err := coord.Connect(context.Background(), "127.0.0.1:1", coord.Config{Username: tc.user, Password: tc.pass})
		if err == nil {
			c.Close()
		}
		if err == nil || !errors.Is(err, coord.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Connect(Username %q) = %v, want an invalid-argument error about %s", tc.user, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Connect(Username %q) error shows the password: %v", tc.user, err)
		}
	}
}
