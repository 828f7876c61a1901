package metrics

import "github.com/prometheus/client_golang/prometheus"

// censusCollector turns the supervisor's census, taken at each scrape,
// into gauges.
type censusCollector struct {
	census                   func() Census
	sessions, runners, spare *prometheus.Desc
}

func newCensusCollector(census func() Census) *censusCollector {
	name := func(n string) string { return prometheus.BuildFQName(namespace, "", n) }
	return &censusCollector{
		census:   census,
		sessions: prometheus.NewDesc(name("sessions"), "Sessions by state: a live session's state as its runner's events show it, notLive for one without a runner.", []string{"state"}, nil),
		runners:  prometheus.NewDesc(name("live_runners"), "Session runners live (started or starting).", nil, nil),
		spare:    prometheus.NewDesc(name("spare_runners"), "Runners started ahead of need, waiting for a session (0 or 1).", nil, nil),
	}
}

func (c *censusCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.sessions
	ch <- c.runners
	ch <- c.spare
}

func (c *censusCollector) Collect(ch chan<- prometheus.Metric) {
	if c.census == nil {
		return
	}
	n := c.census()
	for s, count := range n.Sessions {
		ch <- prometheus.MustNewConstMetric(c.sessions, prometheus.GaugeValue, float64(count), string(s))
	}
	ch <- prometheus.MustNewConstMetric(c.runners, prometheus.GaugeValue, float64(n.Runners))
	ch <- prometheus.MustNewConstMetric(c.spare, prometheus.GaugeValue, float64(n.Spare))
}
