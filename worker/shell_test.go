package worker

import (
	"strings"
	"testing"
)

func TestLooksLikeShell(t *testing.T) {
	long := "<p>" + strings.Repeat("Plenty of server-rendered prose here. ", 30) + "</p>"
	for _, c := range []struct {
		name, doc string
		want      bool
	}{
		{"react root", `<html><head><script src="/static/js/main.js"></script></head><body><div id="root"></div></body></html>`, true},
		{"vue app with text", `<body><div id="app">  <!-- mount --> </div>` + long + `<script src="/app.js"></script></body>`, true},
		{"little text and a bundle", `<body><h1>Loading</h1><script src="/bundle.js"></script></body>`, true},
		{"inline script only, little text", `<body><p>hi</p><script>render()</script></body>`, true},
		{"server-rendered page with script", `<body>` + long + `<script src="/analytics.js"></script></body>`, false},
		{"filled root", `<body><div id="root"><p>` + long + `</p></div><script src="/a.js"></script></body>`, false},
		{"no script", `<body><div id="root"></div></body>`, false},
		{"empty script element", `<body><div id="root"></div><script> </script></body>`, false},
	} {
		if got := looksLikeShell([]byte(c.doc)); got != c.want {
			t.Errorf("%s: looksLikeShell = %v, want %v", c.name, got, c.want)
		}
	}
}
