"""The loopback web UI (`memlikehuman ui`): a browser view of the archive and the changes a person makes.

Modules: ``html`` (escaping-by-default markup), ``security`` (token, Host, Origin, CSRF, headers),
``app`` (the Starlette application and its routes), ``pages`` and ``changes`` (what each route
renders), ``highlight`` (quote spans in an event's text), ``serve`` (binding 127.0.0.1 and running).
"""
