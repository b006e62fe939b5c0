package main

import (
	"fmt"
	"image/color"
	"path/filepath"

	"github.com/genderize-kong/genderize/schema/evaluate"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// plotReliability writes a reliability diagram: observed accuracy against
// stated probability, per probability bucket (a line) and per count bucket
// (labelled points), beside the diagonal of perfect calibration.
func plotReliability(path, title string, byProbability, byCount []evaluate.Bucket) error {
	p := plot.New()
	p.Title.Text = "Reliability: " + filepath.Base(title)
	p.X.Label.Text = "stated probability (mean in bucket)"
	p.Y.Label.Text = "observed accuracy"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0.5, 1, 0.4, 1
	for _, b := range append(byProbability[:len(byProbability):len(byProbability)], byCount...) {
		if b.N > 0 {
			p.Y.Min = min(p.Y.Min, b.Observed-0.05)
		}
	}
	p.Add(plotter.NewGrid())

	diagonal, err := plotter.NewLine(plotter.XYs{{X: 0.5, Y: 0.5}, {X: 1, Y: 1}})
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	diagonal.Color = color.Gray{Y: 128}
	diagonal.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(diagonal)
	p.Legend.Add("perfect calibration", diagonal)

	points := func(table []evaluate.Bucket) (plotter.XYs, []string) {
		var xys plotter.XYs
		var labels []string
		for _, b := range table {
			if b.N > 0 {
				xys = append(xys, plotter.XY{X: b.Stated, Y: b.Observed})
				labels = append(labels, fmt.Sprintf("%s (%d)", b.Label, b.N))
			}
		}
		return xys, labels
	}
	if xys, _ := points(byProbability); len(xys) > 0 {
		line, scatter, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		line.Color = color.RGBA{B: 200, A: 255}
		scatter.Color = line.Color
		p.Add(line, scatter)
		p.Legend.Add("by probability bucket", line, scatter)
	}
	if xys, labels := points(byCount); len(xys) > 0 {
		scatter, err := plotter.NewScatter(xys)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		scatter.Color = color.RGBA{R: 200, A: 255}
		scatter.Shape = draw.TriangleGlyph{}
		scatter.Radius = vg.Points(4)
		names, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		p.Add(scatter, names)
		p.Legend.Add("by count bucket (answers)", scatter)
	}
	p.Legend.Top = false
	p.Legend.Left = false
	if err := p.Save(6*vg.Inch, 6*vg.Inch, path); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}
