"""groupspec's command line and report rendering: the one place that formats output for people."""
