package sim

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlotFormats are the formats Plot writes, named by the file's extension.
var PlotFormats = []string{"svg", "png", "pdf"}

// CheckPlotPath reports whether Plot can write path's format, so that a
// caller can refuse a path before the runs rather than after them.
func CheckPlotPath(path string) error {
	format := strings.TrimPrefix(filepath.Ext(path), ".")
	if !slices.Contains(PlotFormats, format) {
		return fmt.Errorf("extension %q is not one of .%s", filepath.Ext(path), strings.Join(PlotFormats, ", ."))
	}
	return nil
}

// Plot draws the figure into path; the extension (.svg, .png, .pdf) picks
// the format. Simulated points are marks, the paper's bounds lines. The
// file is created only once the drawing is done.
func (fr *FigureResult) Plot(path string) error {
	if err := CheckPlotPath(path); err != nil {
		return err
	}
	p := newPlot(fr.Title)
	var err error
	switch fr.Name {
	case FigureLoad, FigurePostcard:
		unit := "keys written after the queried one / slots"
		if fr.Name == FigurePostcard {
			unit = "paths written after the queried one / chunks"
		}
		p.X.Label.Text = "load factor α (" + unit + ")"
		p.Title.Text = fr.Title + "\nsuccess of a key with α·S later keys"
		if err = plotLoad(p, fr, false); err != nil {
			return err
		}
		avg := newPlot(fr.Title + "\naverage success over a store holding α·S keys")
		avg.X.Label.Text = "load factor α (" + strings.Replace(unit, "written after the queried one", "written", 1) + ")"
		if err = plotLoad(avg, fr, true); err != nil {
			return err
		}
		return saveSideBySide(path, p, avg)
	case FigurePaths:
		p.X.Label.Text = "flows written after the queried one (millions, at the paper's scale)"
		err = plotPaths(p, fr)
	case FigureIfEmpty:
		plots, err := plotIfEmpty(fr)
		if err != nil {
			return err
		}
		plots[0].Title.Text = fr.Title + "\n" + plots[0].Title.Text
		return saveSideBySide(path, plots...)
	case FigureChecksums:
		p.X.Label.Text = "checksum bits b"
		p.Y.Label.Text = "wrong answers per query"
		err = plotChecksums(p, fr)
	default:
		p.X.Label.Text = "load factor α (keys written after the queried one / slots)"
		err = plotCurves(p, fr)
	}
	if err != nil {
		return err
	}
	c, err := p.WriterTo(18*vg.Centimeter, 11*vg.Centimeter, strings.TrimPrefix(filepath.Ext(path), "."))
	if err != nil {
		return err
	}
	return writePlot(path, c)
}

// writePlot renders c and only then writes the file.
func writePlot(path string, c io.WriterTo) error {
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o666)
}

func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(9)
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Y.Label.Text = "query success (%)"
	p.Add(plotter.NewGrid())
	return p
}

// saveSideBySide draws plots next to each other into path.
func saveSideBySide(path string, plots ...*plot.Plot) error {
	w, h := vg.Length(len(plots))*min(14, 36/vg.Length(len(plots)))*vg.Centimeter, 11*vg.Centimeter
	format := strings.TrimPrefix(filepath.Ext(path), ".")
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return err
	}
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, draw.New(c))
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	return writePlot(path, c)
}

// simPoints returns the equal-width bins of r as (x, success %) points.
func simPoints(r *RunResult, x func(*Bin) float64) plotter.XYs {
	var xy plotter.XYs
	for i := range r.Bins {
		if b := &r.Bins[i]; !b.Probe && b.Queries > 0 {
			xy = append(xy, plotter.XY{X: x(b), Y: 100 * b.Success()})
		}
	}
	return xy
}

// theoryLine samples the paper's success bound for cfg over α in [0, hi].
func theoryLine(cfg *Config, hi float64, x func(alpha float64) float64) plotter.XYs {
	const steps = 200
	xy := make(plotter.XYs, 0, steps+1)
	for i := range steps + 1 {
		a := hi * float64(i) / steps
		t := theory(cfg, a)
		if t == nil {
			return nil
		}
		xy = append(xy, plotter.XY{X: x(a), Y: 100 * t.Success})
	}
	return xy
}

func addSeries(p *plot.Plot, i int, label string, pts, line plotter.XYs, dashed bool) error {
	if len(line) > 0 {
		l, err := plotter.NewLine(line)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(0.8)
		if dashed {
			l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
		}
		p.Add(l)
		if len(pts) == 0 {
			p.Legend.Add(label, l)
		}
	}
	if len(pts) > 0 {
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: plotutil.Color(i), Radius: vg.Points(1.8), Shape: plotutil.Shape(i)}
		p.Add(s)
		p.Legend.Add(label, s)
	}
	return nil
}

func alphaOf(b *Bin) float64     { return b.Alpha }
func identity(a float64) float64 { return a }

// plotLoad draws success vs α for each N, the theory as lines, and shades the
// α intervals by the N that is best in theory. With average, the success is
// the average over the keys of a store holding α·S keys: the running mean of
// the bins, exact because a key's fate depends only on the keys after it.
func plotLoad(p *plot.Plot, fr *FigureResult, average bool) error {
	if len(fr.Runs) == 0 {
		return nil
	}
	hi := float64(fr.Runs[0].Config.Keys) / float64(fr.Runs[0].Config.Slots)
	score := func(c *Config, a float64) float64 {
		if average {
			return averageTheory(c, a)
		}
		return theory(c, a).Success
	}
	if err := shadeBestN(p, fr, hi, score); err != nil {
		return err
	}
	for i := range fr.Runs {
		r := &fr.Runs[i]
		pts := simPoints(r, alphaOf)
		if average {
			pts = runningMean(r)
		}
		var line plotter.XYs
		for j := range 201 {
			a := hi * float64(j) / 200
			line = append(line, plotter.XY{X: a, Y: 100 * score(&r.Config, a)})
		}
		if err := addSeries(p, i, r.Label, pts, line, false); err != nil {
			return err
		}
	}
	p.Y.Min, p.Y.Max = 0, 100
	p.Legend.Top = true
	return nil
}

// runningMean returns, at the upper edge α of each equal-width bin, the
// success averaged over that bin and every younger one.
func runningMean(r *RunResult) plotter.XYs {
	var xy plotter.XYs
	var c Counts
	for i := range r.Bins {
		b := &r.Bins[i]
		if b.Probe {
			continue
		}
		c.add(&b.Counts)
		xy = append(xy, plotter.XY{X: float64(b.Hi) / float64(r.Config.Slots), Y: 100 * c.Success()})
	}
	return xy
}

// shadeBestN shades [0, hi] by the N with the highest score in theory.
func shadeBestN(p *plot.Plot, fr *FigureResult, hi float64, score func(*Config, float64) float64) error {
	const steps = 400
	best := func(a float64) int {
		bi, bs := 0, math.Inf(-1)
		for i := range fr.Runs {
			if s := score(&fr.Runs[i].Config, a); s > bs {
				bi, bs = i, s
			}
		}
		return bi
	}
	lo, cur := 0.0, best(hi/steps/2)
	for s := 1; s <= steps; s++ {
		a := hi * float64(s) / steps
		next := cur
		if s < steps {
			next = best(a + hi/steps/2)
		}
		if next == cur && s < steps {
			continue
		}
		poly, err := plotter.NewPolygon(plotter.XYs{{X: lo, Y: 0}, {X: a, Y: 0}, {X: a, Y: 100}, {X: lo, Y: 100}})
		if err != nil {
			return err
		}
		r, g, b, _ := plotutil.Color(cur).RGBA()
		poly.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 40}
		poly.LineStyle.Width = 0
		p.Add(poly)
		lo, cur = a, next
	}
	return nil
}

// plotPaths draws success vs flows since, at the paper's scale, for each
// storage size.
func plotPaths(p *plot.Plot, fr *FigureResult) error {
	for i := range fr.Runs {
		r := &fr.Runs[i]
		scale := r.Scale
		pts := simPoints(r, func(b *Bin) float64 { return b.MeanAge * scale / 1e6 })
		hi := float64(r.Config.Keys) / float64(r.Config.Slots)
		perAlpha := float64(r.Config.Slots) * scale / 1e6
		line := theoryLine(&r.Config, hi, func(a float64) float64 { return a * perAlpha })
		if err := addSeries(p, i, r.Label, pts, line, true); err != nil {
			return err
		}
	}
	p.Y.Min, p.Y.Max = 0, 100
	p.Legend.Top = false
	p.Legend.Left = true
	return nil
}

// plotChecksums draws the wrong-answer rate vs b on a log scale, with the
// bound; runs without a wrong answer are drawn at 3/queries, the 95 % upper
// bound of a rate never observed.
func plotChecksums(p *plot.Plot, fr *FigureResult) error {
	var groups []string
	for i := range fr.Runs {
		if g := fr.Runs[i].Group; !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	for gi, g := range groups {
		var seen, none, bound plotter.XYs
		for i := range fr.Runs {
			r := &fr.Runs[i]
			if r.Group != g {
				continue
			}
			b := float64(r.Config.ChecksumBits)
			if r.All.Wrong > 0 {
				seen = append(seen, plotter.XY{X: b, Y: r.All.WrongRate()})
			} else {
				none = append(none, plotter.XY{X: b, Y: 3 / float64(r.All.Queries)})
			}
			if r.AllTheory != nil && r.AllTheory.Wrong > 0 {
				bound = append(bound, plotter.XY{X: b, Y: r.AllTheory.Wrong})
			}
		}
		if err := addSeries(p, 2*gi, "simulated, "+g, seen, nil, false); err != nil {
			return err
		}
		if err := addSeries(p, 2*gi, "bound (paper A.5), "+g, nil, bound, true); err != nil {
			return err
		}
		if len(none) > 0 {
			s, err := plotter.NewScatter(none)
			if err != nil {
				return err
			}
			s.GlyphStyle = draw.GlyphStyle{Color: plotutil.Color(2*gi + 1), Radius: vg.Points(2.5), Shape: draw.PyramidGlyph{}}
			p.Add(s)
			p.Legend.Add("none observed (3/queries), "+g, s)
		}
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = powersOfTen{}
	p.Legend.Top = false
	p.Legend.Left = true
	return nil
}

// powersOfTen marks a log axis at every power of ten, labelled 1e-k.
type powersOfTen struct{}

func (powersOfTen) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for k := math.Floor(math.Log10(lo)); k <= math.Ceil(math.Log10(hi)); k++ {
		ticks = append(ticks, plot.Tick{Value: math.Pow(10, k), Label: fmt.Sprintf("1e%.0f", k)})
	}
	return ticks
}

// plotCurves draws success vs α for every run, one color each, with the
// bound of the last run.
func plotCurves(p *plot.Plot, fr *FigureResult) error {
	for i := range fr.Runs {
		r := &fr.Runs[i]
		if err := addSeries(p, i, r.Label, simPoints(r, alphaOf), nil, false); err != nil {
			return err
		}
	}
	if n := len(fr.Runs); n > 0 {
		r := &fr.Runs[n-1]
		hi := float64(r.Config.Keys) / float64(r.Config.Slots)
		if err := addSeries(p, n, "bound (paper A.5)", nil, theoryLine(&r.Config, hi, identity), true); err != nil {
			return err
		}
	}
	p.Y.Max = 100
	p.Legend.Top = true
	return nil
}

// plotIfEmpty draws one panel per group (keys/slots ratio and N): every copy
// written against copies after the first only into empty slots.
func plotIfEmpty(fr *FigureResult) ([]*plot.Plot, error) {
	var plots []*plot.Plot
	byGroup := map[string]*plot.Plot{}
	for i := range fr.Runs {
		r := &fr.Runs[i]
		p, ok := byGroup[r.Group]
		if !ok {
			p = newPlot(fmt.Sprintf("%d keys in %d slots, N = %d", r.Config.Keys, r.Config.Slots, r.Config.N))
			p.X.Label.Text = "α (later keys / slots)"
			p.Y.Max = 100
			p.Legend.Top = false
			p.Legend.Left = true
			byGroup[r.Group] = p
			plots = append(plots, p)
			hi := float64(r.Config.Keys) / float64(r.Config.Slots)
			if err := addSeries(p, 2, "bound (paper A.5), every copy", nil, theoryLine(&r.Config, hi, identity), true); err != nil {
				return nil, err
			}
		}
		ci, label := 0, "simulated, every copy"
		if r.Config.IfEmpty {
			ci, label = 1, "simulated, later copies only into empty slots"
		}
		if err := addSeries(p, ci, label, simPoints(r, alphaOf), nil, false); err != nil {
			return nil, err
		}
	}
	return plots, nil
}
