"""The service layer: the one place that loads the catalog, the plugins and a fabric, and
answers the requests the CLI and the TUI both make (path, collective, traffic, plan,
import, doctor, calibrate) with typed request objects (``services.requests``)."""
