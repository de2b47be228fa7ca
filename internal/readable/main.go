package readable

import (
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Shares of the body's score that pick the main block: an article or a
// main holding articleShare of it is taken as it stands; otherwise the
// choice descends from the body into the child holding descendShare of
// its parent's score, as long as there is one.
const (
	articleShare = 0.25
	descendShare = 0.7
)

// mainBlock returns the node holding the page's main content: the
// best-scoring article or main element when it holds enough of the page's
// text, else the densest block found by descending from the body. A
// node's score is the length of its text outside links, so a block of
// links (a menu without a nav element) weighs nothing.
func mainBlock(doc *html.Node) *html.Node {
	scores := score(doc)
	body := find(doc, atom.Body)
	if body == nil {
		body = doc
	}
	total := scores[body]
	var best *html.Node
	walk(body, func(n *html.Node) bool {
		if n.Type == html.ElementNode && (n.DataAtom == atom.Article || n.DataAtom == atom.Main) {
			if best == nil || scores[n] > scores[best] {
				best = n
			}
		}
		return true
	})
	if best != nil && float64(scores[best]) >= articleShare*float64(total) {
		return best
	}
	cur := body
	for {
		var next *html.Node
		for c := cur.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && float64(scores[c]) >= descendShare*float64(scores[cur]) && scores[c] > 0 {
				next = c
				break
			}
		}
		if next == nil || !isContainer(next) {
			return withHeading(cur, body)
		}
		cur = next
	}
}

// withHeading widens the chosen block to its parent while a heading
// (h1 to h3) stands before it among its siblings: a post's title is often
// beside the division holding its text, not in it.
func withHeading(n, top *html.Node) *html.Node {
	for n != top && n.Parent != nil {
		found := false
		for s := n.PrevSibling; s != nil && !found; s = s.PrevSibling {
			found = s.Type == html.ElementNode && (s.DataAtom == atom.H1 || s.DataAtom == atom.H2 || s.DataAtom == atom.H3)
		}
		if !found {
			return n
		}
		n = n.Parent
	}
	return n
}

// isContainer reports whether the main content could be n alone (a
// paragraph or a list is part of the content, not its container).
func isContainer(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Div, atom.Section, atom.Article, atom.Main, atom.Td, atom.Center, atom.Span, atom.Font:
		return true
	}
	return false
}

// score gives each node the length of its text outside links, computed
// bottom up without recursion.
func score(doc *html.Node) map[*html.Node]int {
	var order []*html.Node
	walk(doc, func(n *html.Node) bool {
		order = append(order, n)
		return true
	})
	s := make(map[*html.Node]int, len(order))
	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		if n.Type == html.TextNode && !inLink(n) {
			s[n] += textLen(n.Data)
		}
		if n.Parent != nil {
			s[n.Parent] += s[n]
		}
	}
	return s
}

// inLink reports whether n is inside an <a> (up to a few levels).
func inLink(n *html.Node) bool {
	for p, i := n.Parent, 0; p != nil && i < 8; p, i = p.Parent, i+1 {
		if p.Type == html.ElementNode && p.DataAtom == atom.A {
			return true
		}
	}
	return false
}

// find returns the first element a under n.
func find(n *html.Node, a atom.Atom) *html.Node {
	var got *html.Node
	walk(n, func(c *html.Node) bool {
		if got == nil && c.Type == html.ElementNode && c.DataAtom == a {
			got = c
		}
		return got == nil
	})
	return got
}
