"""The daemon: accounts and areas scheduled, polls run, self-metrics kept."""
