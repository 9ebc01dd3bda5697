package fetch

import "testing"

// FuzzResolvePlain: wherever resolveLink's unparsed path answers, the full
// WHATWG parse gives the same link.
func FuzzResolvePlain(f *testing.F) {
	for _, c := range [][2]string{
		{"http://example.com/a/b", "/p/1"}, {"http://example.com/a/b", "http://h2.test/p/2#x"}, {"https://u:p@example.com/", "/x"},
		{"http://example.com:8080/", "/p?q=1#f"}, {"http://[::1]:8080/", "/p"}, {"http://xn--bcher-kva.example/", "/p"},
		{"http://example.com/", "//other.test/p"}, {"http://example.com/", "/a/../b"}, {"http://example.com/", "/a%2e/b"},
		{"http://example.com/", "https://example.com:443/"}, {"http://example.com/", "/#"}, {"http://example.com/", "/a b"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, baseStr, ref string) {
		base, err := linkParser.Parse(baseStr)
		if err != nil {
			return
		}
		fast, ok := resolvePlain(base, ref)
		if !ok {
			return
		}
		u, err := base.Parse(ref)
		if err != nil {
			t.Fatalf("resolvePlain(%q, %q) = %q, parse: %v", baseStr, ref, fast, err)
		}
		if slow := u.Href(true); slow != fast {
			t.Fatalf("resolvePlain(%q, %q) = %q, full parse %q", baseStr, ref, fast, slow)
		}
	})
}
