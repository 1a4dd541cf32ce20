package diagnose

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"

	"github.com/dta-go/dta/internal/hawkeye/record"
)

// SVGOptions tune WriteSVG.
type SVGOptions struct {
	// SwitchName names a switch (default "s<id>").
	SwitchName func(uint16) string
	// FlowName names a flow (default its 5-tuple).
	FlowName func(record.Tuple) string
	// MaxFlows bounds the waiting flows drawn (default 12).
	MaxFlows int
}

// WriteSVG draws the part of g that d rests on as an SVG image: waiting
// flows on the left (dashed flow→port edges: paused packets), port nodes in
// the middle by their distance from the victim's path along port-level
// edges (solid, width by weight; the loop in orange), and on the right the
// root-cause flows with their contributions at the initial port (red).
func WriteSVG(w io.Writer, g *Graph, d *Diagnosis, opt SVGOptions) error {
	if opt.SwitchName == nil {
		opt.SwitchName = func(sw uint16) string { return fmt.Sprintf("s%d", sw) }
	}
	if opt.FlowName == nil {
		opt.FlowName = func(t record.Tuple) string { return t.String() }
	}
	if opt.MaxFlows == 0 {
		opt.MaxFlows = 12
	}
	portName := func(p Port) string { return fmt.Sprintf("%s.p%d", opt.SwitchName(p.Switch), p.Port) }
	// Ports: the victim's, those on port-level edges reachable from them,
	// the initial port and the loop.
	depth := map[Port]int{}
	var queue []Port
	if v := g.Flows[g.Victim]; v != nil {
		for p := range v.Pkts {
			depth[p] = 0
			queue = append(queue, p)
		}
	}
	for _, p := range append(append([]Port{d.Initial}, d.Loop...), d.Path...) {
		if _, ok := depth[p]; !ok && g.Ports[p] != nil {
			depth[p] = 0
			queue = append(queue, p)
		}
	}
	sort.Slice(queue, func(i, j int) bool { return less(queue[i], queue[j]) })
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, e := range g.Ports[p].Out {
			if _, ok := depth[e.To]; !ok {
				depth[e.To] = depth[p] + 1
				queue = append(queue, e.To)
			}
		}
	}
	cols := map[int][]Port{}
	maxDepth := 0
	for p, k := range depth {
		cols[k] = append(cols[k], p)
		maxDepth = max(maxDepth, k)
	}
	for k := range cols {
		sort.Slice(cols[k], func(i, j int) bool { return less(cols[k][i], cols[k][j]) })
	}
	// Waiting flows: the victim first, then by paused packets at the ports
	// drawn.
	type wf struct {
		t      record.Tuple
		paused uint64
	}
	var waiting []wf
	for t, f := range g.Flows {
		var n uint64
		for p, x := range f.PausedAt {
			if _, ok := depth[p]; ok {
				n += x
			}
		}
		if n > 0 || t == g.Victim {
			waiting = append(waiting, wf{t, n})
		}
	}
	sort.Slice(waiting, func(i, j int) bool {
		if (waiting[i].t == g.Victim) != (waiting[j].t == g.Victim) {
			return waiting[i].t == g.Victim
		}
		if waiting[i].paused != waiting[j].paused {
			return waiting[i].paused > waiting[j].paused
		}
		return waiting[i].t.String() < waiting[j].t.String()
	})
	if len(waiting) > opt.MaxFlows {
		waiting = waiting[:opt.MaxFlows]
	}
	const (
		colW   = 170
		rowH   = 46
		flowW  = 300
		top    = 70
		nodeW  = 110
		nodeH  = 26
		margin = 20
	)
	rows := len(waiting)
	for _, c := range cols {
		rows = max(rows, len(c))
	}
	rows = max(rows, len(d.RootFlows))
	width := margin*2 + flowW + (maxDepth+1)*colW + flowW
	height := top + rows*rowH + margin
	pos := map[Port][2]float64{}
	for k, c := range cols {
		for i, p := range c {
			pos[p] = [2]float64{float64(margin + flowW + k*colW + 20), float64(top + i*rowH)}
		}
	}
	var maxW float64
	for p := range depth {
		for _, e := range g.Ports[p].Out {
			maxW = math.Max(maxW, e.Weight)
		}
	}
	inLoop := map[Port]bool{}
	for _, p := range d.Loop {
		inLoop[p] = true
	}
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(w, `<defs><marker id="a" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0L10,5L0,10z" fill="#444"/></marker>`+
		`<marker id="r" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0L10,5L0,10z" fill="#c00"/></marker></defs>`+"\n")
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(w, `<text x="%d" y="22" font-size="14" font-weight="bold">%s</text>`+"\n", margin, html.EscapeString(d.Summary(opt.SwitchName)))
	fmt.Fprintf(w, `<text x="%d" y="42" fill="#555">dashed: flow paused at port (paused packets) · solid: port waits for port (weight) · red: contribution of a flow to the initial port's queue</text>`+"\n", margin)
	// Port-level edges.
	for p := range depth {
		for _, e := range g.Ports[p].Out {
			a, b := pos[p], pos[e.To]
			color := "#444"
			if inLoop[p] && inLoop[e.To] {
				color = "#e67e00"
			}
			sw := 1 + 4*e.Weight/math.Max(maxW, 1e-9)
			x1, y1, x2, y2 := a[0]+nodeW, a[1]+nodeH/2, b[0], b[1]+nodeH/2
			if b[0] <= a[0] { // back or same column: curve below
				fmt.Fprintf(w, `<path d="M%.0f,%.0f C%.0f,%.0f %.0f,%.0f %.0f,%.0f" fill="none" stroke="%s" stroke-width="%.1f" marker-end="url(#a)"/>`+"\n",
					a[0]+nodeW/2, a[1]+nodeH, a[0]+nodeW/2, a[1]+nodeH+40, b[0]+nodeW/2, b[1]+nodeH+40, b[0]+nodeW/2, b[1]+nodeH, color, sw)
			} else {
				fmt.Fprintf(w, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="%.1f" marker-end="url(#a)"/>`+"\n", x1, y1, x2, y2, color, sw)
			}
			fmt.Fprintf(w, `<text x="%.0f" y="%.0f" fill="#666" font-size="9">%.3g</text>`+"\n", (x1+x2)/2, (y1+y2)/2-4, e.Weight)
		}
	}
	// Flows on the left and their paused edges.
	for i, f := range waiting {
		y := float64(top + i*rowH)
		fill := "#eef"
		if f.t == g.Victim {
			fill = "#fdd"
		}
		fmt.Fprintf(w, `<rect x="%d" y="%.0f" width="%d" height="%d" rx="4" fill="%s" stroke="#88a"/>`+"\n", margin, y, flowW-40, nodeH, fill)
		fmt.Fprintf(w, `<text x="%d" y="%.0f">%s</text>`+"\n", margin+4, y+17, html.EscapeString(opt.FlowName(f.t)))
		for p, x := range g.Flows[f.t].PausedAt {
			b, ok := pos[p]
			if !ok {
				continue
			}
			fmt.Fprintf(w, `<line x1="%d" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#77a" stroke-dasharray="4,3" marker-end="url(#a)"/>`+"\n", margin+flowW-40, y+nodeH/2, b[0], b[1]+nodeH/2)
			fmt.Fprintf(w, `<text x="%.0f" y="%.0f" fill="#77a" font-size="9">%d</text>`+"\n", b[0]-30, b[1]+nodeH/2-3, x)
		}
	}
	// Port nodes.
	for p, a := range pos {
		n := g.Ports[p]
		fill := "#f4f4f4"
		switch {
		case p == d.Initial:
			fill = "#fbb"
		case inLoop[p]:
			fill = "#fde3c0"
		case n.Paused > 0:
			fill = "#dde8ff"
		}
		fmt.Fprintf(w, `<rect x="%.0f" y="%.0f" width="%d" height="%d" rx="4" fill="%s" stroke="#555"/>`+"\n", a[0], a[1], nodeW, nodeH, fill)
		fmt.Fprintf(w, `<text x="%.0f" y="%.0f">%s</text>`+"\n", a[0]+4, a[1]+12, html.EscapeString(portName(p)))
		fmt.Fprintf(w, `<text x="%.0f" y="%.0f" font-size="8" fill="#555">paused %d · q %.1f</text>`+"\n", a[0]+4, a[1]+23, n.Paused, n.AvgQueue())
	}
	// Root-cause flows on the right.
	if a, ok := pos[d.Initial]; ok {
		x := float64(width - margin - flowW + 40)
		for i, c := range d.RootFlows {
			y := float64(top + i*rowH)
			fmt.Fprintf(w, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#c00" marker-end="url(#r)"/>`+"\n", a[0]+nodeW, a[1]+nodeH/2, x, y+nodeH/2)
			fmt.Fprintf(w, `<rect x="%.0f" y="%.0f" width="%d" height="%d" rx="4" fill="#fee" stroke="#c00"/>`+"\n", x, y, flowW-40, nodeH)
			fmt.Fprintf(w, `<text x="%.0f" y="%.0f">%s  +%.1f</text>`+"\n", x+4, y+17, html.EscapeString(opt.FlowName(c.Tuple)), c.Weight)
		}
	}
	_, err := fmt.Fprintln(w, "</svg>")
	return err
}

// Summary returns the diagnosis in one line with switches named.
func (d *Diagnosis) Summary(name func(uint16) string) string {
	if d.Kind == None {
		return "no anomaly found"
	}
	pn := func(p Port) string { return fmt.Sprintf("%s.p%d", name(p.Switch), p.Port) }
	s := fmt.Sprintf("%s: %s at %s", d.Kind, d.Cause, pn(d.Initial))
	if d.Cause == CauseInjection {
		s += fmt.Sprintf(" (injected by %s)", name(d.RootHost))
	}
	return s
}
