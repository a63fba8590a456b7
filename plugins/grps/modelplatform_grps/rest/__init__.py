"""grps over HTTP: /grps/v1/..., streaming, custom model routes, the monitor page."""
