// Sessions and supervisors are driven by the Reactor's loop; importing Acquisition brings it along.
@_exported import Reactor
