"""The loopback web UI (`memlikehuman ui`): a browser view of the archive and the changes a person makes.

Modules: ``serve`` (binding 127.0.0.1 and running uvicorn), ``security`` (token, Host, Origin,
headers), ``app`` (routes and error pages), ``browse`` / ``records`` / ``sessions`` (the pages),
``changes`` (correct, forget after a preview, persona edit; forms and CSRF), ``html`` (markup
that escapes by default), ``highlight`` (quote spans in an event's text), ``counts`` (scope counts),
``common`` (parameters, navigation).
"""
