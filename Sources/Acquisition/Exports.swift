// Sessions and supervisors are driven by the Reactor's loop and speak in the shared Model values
// (addresses, tag configuration, backoff, log level); importing Acquisition brings both along.
@_exported import Model
@_exported import Reactor
