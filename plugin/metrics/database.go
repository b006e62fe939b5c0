package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/genderize-kong/genderize/engine"
)

var (
	databaseInfoDesc = prometheus.NewDesc("genderize_database_info",
		"The name database being answered from (always 1).",
		[]string{"path", "schema_version", "keys", "countries", "built"}, nil)
	databaseLoadedDesc = prometheus.NewDesc("genderize_database_loaded_timestamp_seconds",
		"When the process last opened a name database, in Unix seconds.",
		nil, nil)
)

// databaseCollector describes, at every scrape, the databases the process
// answers from now: a database swapped in shows as soon as it serves.
// Before the first request has opened one, there is no series.
type databaseCollector struct {
	databases func() []engine.Info
}

func (c databaseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- databaseInfoDesc
	ch <- databaseLoadedDesc
}

func (c databaseCollector) Collect(ch chan<- prometheus.Metric) {
	infos := c.databases()
	var latest float64
	for _, i := range infos {
		ch <- prometheus.MustNewConstMetric(databaseInfoDesc, prometheus.GaugeValue, 1,
			i.Path, i.SchemaVersion, strconv.FormatInt(i.Keys, 10), strconv.FormatInt(i.Countries, 10), i.Built)
		if t := float64(i.Loaded.UnixNano()) / 1e9; t > latest {
			latest = t
		}
	}
	if len(infos) > 0 {
		ch <- prometheus.MustNewConstMetric(databaseLoadedDesc, prometheus.GaugeValue, latest)
	}
}
