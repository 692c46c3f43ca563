"""Serving a lecture hall: N Streamlit workers behind nginx, kept alive by a supervisor.

``python -m serve`` (``make serve WORKERS=N``) runs the supervisor (``serve.supervisor``); ``serve.conf``
renders the nginx configuration, also for workers on other hosts (``python -m serve.conf``);
``serve.workers`` starts and probes one Streamlit process.
"""
