"""Hub API routes for collections."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from releaselib.localhub.apicommon import (
    HubHTTPError,
    context,
    is_authenticated,
    json_body,
    paginated,
    require_token,
)
from releaselib.localhub.store import Collection, HubStore

_COLLECTION = "/api/collections/{namespace}/{slug}"
_LISTED_ITEMS = 4  # the Hub shows only the first items of each listed collection


def collection_dict(found: Collection, user: str, *, items: int | None = None) -> dict[str, Any]:
    """The Collection JSON, without ``position`` (``list_collections`` adds its own); its owner
    is a user when the namespace is the Hub's user, else an org (as ``hf collections`` shows)."""
    data: dict[str, Any] = {
        "slug": found.slug,
        "title": found.title,
        "owner": {"name": found.namespace, "type": "user" if found.namespace == user else "org"},
        "items": [
            {**item, "position": position} for position, item in enumerate(found.items[:items])
        ],
        "lastUpdated": found.last_updated,
        "private": found.private,
        "theme": "default",
        "upvotes": 0,
        "isUpvotedByUser": False,
    }
    if found.description is not None:
        data["description"] = found.description
    return data


def _detail(request: Request, found: Collection) -> JSONResponse:
    return JSONResponse({**collection_dict(found, context(request).store.user), "position": 0})


def _visible(request: Request) -> Collection:
    params = request.path_params
    found = context(request).store.collection(f"{params['namespace']}/{params['slug']}")
    if found is None or (found.private and not is_authenticated(request)):
        raise HubHTTPError(404, "Collection not found")
    return found


def _editable(request: Request) -> Collection:
    require_token(request)
    return _visible(request)


async def create_collection(request: Request) -> JSONResponse:
    require_token(request)
    body = await json_body(request)
    store: HubStore = context(request).store
    namespace, title = body.get("namespace") or store.user, body.get("title")
    if not isinstance(title, str) or not title:
        raise HubHTTPError(400, "a collection needs a title")
    with store.lock:
        for existing in store.collections():
            if existing.namespace == namespace and existing.title == title:
                return JSONResponse(
                    {
                        "error": "You already have a collection with this title",
                        "slug": existing.slug,
                    },
                    409,
                )
        found = store.new_collection(
            namespace=namespace,
            title=title,
            description=body.get("description"),
            private=bool(body.get("private")),
        )
    return _detail(request, found)


async def list_collections(request: Request) -> JSONResponse:
    owner = request.query_params.get("owner")
    item = request.query_params.get("item")
    authenticated = is_authenticated(request)
    listed = [
        collection_dict(found, context(request).store.user, items=_LISTED_ITEMS)
        for found in context(request).store.collections()
        if (not found.private or authenticated)
        and (owner is None or found.namespace == owner)
        and (item is None or any(f"{i['type']}s/{i['id']}" == item for i in found.items))
    ]
    page, headers = paginated(request, listed)
    return JSONResponse(page, headers=headers)


async def get_collection(request: Request) -> JSONResponse:
    return _detail(request, _visible(request))


async def update_collection(request: Request) -> JSONResponse:
    found = _editable(request)
    body = await json_body(request)
    for key in ("title", "description", "private"):
        if body.get(key) is not None:
            setattr(found, key, body[key])
    context(request).store.save_collection(found)
    user = context(request).store.user
    return JSONResponse({"data": {**collection_dict(found, user), "position": 0}})


async def delete_collection(request: Request) -> JSONResponse:
    context(request).store.delete_collection(_editable(request))
    return JSONResponse({})


async def add_collection_item(request: Request) -> JSONResponse:
    store = context(request).store
    body = await json_body(request)
    with store.lock:
        found = _editable(request)
        item = body.get("item") or {}
        if not item.get("id") or not item.get("type"):
            raise HubHTTPError(400, "an item needs an id and a type")
        if any(i["id"] == item["id"] and i["type"] == item["type"] for i in found.items):
            return JSONResponse({"error": "Item already in the collection"}, 409)
        entry: dict[str, Any] = {"_id": store.new_item_id(), "id": item["id"], "type": item["type"]}
        if body.get("note"):
            entry["note"] = {"text": body["note"], "html": body["note"]}
        found.items.append(entry)
        store.save_collection(found)
    return _detail(request, found)


async def delete_collection_item(request: Request) -> JSONResponse:
    store = context(request).store
    with store.lock:
        found = _editable(request)
        kept = [i for i in found.items if i["_id"] != request.path_params["item_id"]]
        if len(kept) == len(found.items):
            raise HubHTTPError(404, "Item not found in the collection")
        found.items = kept
        store.save_collection(found)
    return JSONResponse({})


def routes() -> list[Route]:
    return [
        Route("/api/collections", create_collection, methods=["POST"]),
        Route("/api/collections", list_collections),
        Route(_COLLECTION, get_collection),
        Route(_COLLECTION, update_collection, methods=["PATCH"]),
        Route(_COLLECTION, delete_collection, methods=["DELETE"]),
        Route(f"{_COLLECTION}/items", add_collection_item, methods=["POST"]),
        Route(f"{_COLLECTION}/items/{{item_id}}", delete_collection_item, methods=["DELETE"]),
    ]
