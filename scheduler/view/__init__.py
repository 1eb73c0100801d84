"""The host view's parts, composed by ``scheduler.view.host_manager``:
``tracking`` (aggregates and instances from casts) and ``refresh``
(the HostStates and their HostTable read from the database)."""
