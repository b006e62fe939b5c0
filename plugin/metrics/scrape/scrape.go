// Package scrape reads Prometheus metrics into plain numbers, the way a
// test or a benchmark checks what a /metrics endpoint says.
package scrape

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Samples are values by series: `name{label="value",...}` with the labels
// sorted by name, or the bare name for a series without labels. A
// histogram or summary gives its name_count and name_sum.
type Samples map[string]float64

// Get scrapes url (an address serving Prometheus' text format).
func Get(ctx context.Context, url string) (Samples, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: status %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	out := Samples{}
	for _, f := range families {
		out.Add(f)
	}
	return out, nil
}

// Gather reads g, as a scrape of its registry would.
func Gather(g prometheus.Gatherer) (Samples, error) {
	families, err := g.Gather()
	if err != nil {
		return nil, err
	}
	out := Samples{}
	for _, f := range families {
		out.Add(f)
	}
	return out, nil
}

// Add adds the series of f.
func (s Samples) Add(f *dto.MetricFamily) {
	for _, m := range f.GetMetric() {
		labels := make([]string, 0, len(m.GetLabel()))
		for _, l := range m.GetLabel() {
			labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
		}
		slices.Sort(labels)
		series := func(name string) string {
			if len(labels) == 0 {
				return name
			}
			return name + "{" + strings.Join(labels, ",") + "}"
		}
		switch {
		case m.Counter != nil:
			s[series(f.GetName())] = m.Counter.GetValue()
		case m.Gauge != nil:
			s[series(f.GetName())] = m.Gauge.GetValue()
		case m.Untyped != nil:
			s[series(f.GetName())] = m.Untyped.GetValue()
		case m.Histogram != nil:
			s[series(f.GetName()+"_count")] = float64(m.Histogram.GetSampleCount())
			s[series(f.GetName()+"_sum")] = m.Histogram.GetSampleSum()
		case m.Summary != nil:
			s[series(f.GetName()+"_count")] = float64(m.Summary.GetSampleCount())
			s[series(f.GetName()+"_sum")] = m.Summary.GetSampleSum()
		}
	}
}

// Prefixed returns the series whose names start with prefix, sorted, one
// "series value" per line: for a report.
func (s Samples) Prefixed(prefix string) []string {
	var out []string
	for k, v := range s {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k+" "+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	slices.Sort(out)
	return out
}
