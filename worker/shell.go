package worker

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// shellTextMax is the most visible text (bytes, whitespace runs counted
// as one) a page may have and still look like a script shell.
const shellTextMax = 300

// shellRootIDs are the ids single-page-app frameworks mount into: an
// empty element with one of them marks a shell.
var shellRootIDs = map[string]bool{
	"root": true, "app": true, "__next": true, "__nuxt": true, "___gatsby": true, "svelte": true, "main": true, "application": true,
}

// looksLikeShell reports whether an HTML document looks like the shell of
// a page built by script (config render "auto"): it loads or holds a
// script and either has an empty mount element (shellRootIDs, e.g.
// <div id="root"></div>) or under shellTextMax bytes of visible text (text
// outside script, style, noscript and template). A document that does not
// parse, or has no script, is not a shell. Pure: reads body only.
func looksLikeShell(body []byte) bool {
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return false
	}
	var text int
	scripts, emptyRoot := 0, false
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Script:
				if attr(n, "src") != "" || (n.FirstChild != nil && strings.TrimSpace(n.FirstChild.Data) != "") {
					scripts++
				}
				return
			case atom.Style, atom.Noscript, atom.Template:
				return
			}
			if shellRootIDs[strings.ToLower(attr(n, "id"))] && emptyElement(n) {
				emptyRoot = true
			}
		}
		if n.Type == html.TextNode {
			text += len(strings.Join(strings.Fields(n.Data), " "))
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return scripts > 0 && (emptyRoot || text < shellTextMax)
}

// emptyElement reports whether n holds nothing but whitespace and comments.
func emptyElement(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch {
		case c.Type == html.CommentNode:
		case c.Type == html.TextNode && strings.TrimSpace(c.Data) == "":
		default:
			return false
		}
	}
	return true
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}
