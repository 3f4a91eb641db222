"""TLE-Raw's modules under the names FlagTree gives them: a TLE-Raw program
ports to stock Triton by importing `edsl.tle.X` where it imported
`triton.experimental.tle.X` (docs/tle-raw.md lists what differs)."""
