"""profpipe's version (read by the build, the CLI's --version and every output's manifest)."""
VERSION = "0.1.0"
