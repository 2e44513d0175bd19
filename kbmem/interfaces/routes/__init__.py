"""The HTTP API's routes, one :class:`fastapi.APIRouter` per area (pages, research, writes,
the Summit routes), what they share (:mod:`.common`) and the guard every request passes
before routing (:mod:`.guard`). :func:`kbmem.interfaces.app.create_app` puts them together.
"""
