"""A real FastAPI app for the OpenAPI tests (tests/e2e/openapi/): ``python
tests/support/servers/openapi_app.py PORT`` serves it with uvicorn on 127.0.0.1:PORT;
the tests in process import ``app``.

Routes: a path parameter (``GET /items/{item_id}``, 404 when there is none), a query
with an enum and a list (``GET /items``), a JSON body of nested models with an enum
(``POST /items``), a body whose field collides with the path parameter
(``PUT /items/{item_id}``), a recursive model (``POST /trees/size``), a file of bytes
(``GET /files/{name}``), a text answer (``GET /greeting``), an error route
(``GET /teapot``: 418 with a long body), a route that answers 503 until its third call
(``GET /flaky/{key}``), the caller's API key (``GET /key``), and one excluded from the schema, for no tool (``/hidden``).
"""

from __future__ import annotations

import enum
import sys
from collections import Counter

from fastapi import FastAPI, HTTPException, Query, Request, Response
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, Field

app = FastAPI(title="Inventory", version="2.1.0")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


class Color(enum.StrEnum):
    red = "red"
    green = "green"
    blue = "blue"


class Dimensions(BaseModel):
    width: float = Field(gt=0, description="in cm")
    height: float = Field(gt=0)
    unit: str = "cm"


class ItemIn(BaseModel):
    name: str = Field(min_length=1, max_length=40)
    color: Color
    dimensions: Dimensions
    tags: list[str] = []
    note: str | None = None


class Item(ItemIn):
    item_id: int


class ItemList(BaseModel):
    items: list[Item]
    total: int


class Rename(BaseModel):
    item_id: int = Field(description="the item's new id")
    name: str


class Node(BaseModel):
    label: str
    children: list[Node] = []


class Size(BaseModel):
    nodes: int
    depth: int


ITEMS: dict[int, Item] = {
    1: Item(item_id=1, name="lamp", color=Color.red, dimensions=Dimensions(width=20, height=45)),
    2: Item(item_id=2, name="chair", color=Color.blue, dimensions=Dimensions(width=50, height=90), tags=["wood"]),
}
FLAKY: Counter[str] = Counter()


@app.get("/items/{item_id}", operation_id="get_item", tags=["items"], summary="Get one item")
def get_item(item_id: int) -> Item:
    if item_id not in ITEMS:
        raise HTTPException(status_code=404, detail=f"no item {item_id}")
    return ITEMS[item_id]


@app.get("/items", operation_id="list_items", tags=["items"], summary="List items")
def list_items(color: Color | None = None, tag: list[str] = Query(default=[]), limit: int = Query(default=10, ge=1)) -> ItemList:
    found = [i for i in ITEMS.values() if (color is None or i.color == color) and all(t in i.tags for t in tag)]
    return ItemList(items=found[:limit], total=len(found))


@app.post("/items", operation_id="create_item", tags=["items"], status_code=201, summary="Create an item")
def create_item(item: ItemIn) -> Item:
    created = Item(item_id=max(ITEMS) + 1, **item.model_dump())
    ITEMS[created.item_id] = created
    return created


@app.put("/items/{item_id}", operation_id="rename_item", tags=["items"])
def rename_item(item_id: int, rename: Rename) -> Item:
    if item_id not in ITEMS:
        raise HTTPException(status_code=404, detail=f"no item {item_id}")
    item = ITEMS.pop(item_id)
    ITEMS[rename.item_id] = renamed = item.model_copy(update={"item_id": rename.item_id, "name": rename.name})
    return renamed


@app.post("/trees/size", tags=["trees"])
def tree_size(tree: Node) -> Size:
    def walk(node: Node, depth: int) -> tuple[int, int]:
        counts = [walk(child, depth + 1) for child in node.children]
        return 1 + sum(c[0] for c in counts), max([depth, *(c[1] for c in counts)])

    nodes, depth = walk(tree, 1)
    return Size(nodes=nodes, depth=depth)


@app.get(
    "/files/{name}",
    operation_id="download",
    tags=["files"],
    responses={200: {"content": {"image/png": {}}, "description": "The file's bytes"}},
    response_class=Response,
)
def download(name: str) -> Response:
    return Response(PNG, media_type="image/png", headers={"content-disposition": f'attachment; filename="{name}.png"'})


@app.get("/greeting", operation_id="greeting", response_class=PlainTextResponse, tags=["text"])
def greeting(name: str = "world") -> str:
    return f"Hello, {name}!"


@app.get("/teapot", operation_id="teapot", tags=["errors"])
def teapot() -> dict[str, str]:
    raise HTTPException(status_code=418, detail="I'm a teapot. " + "x" * 5000)


@app.get("/flaky/{key}", operation_id="flaky", tags=["errors"])
def flaky(key: str) -> dict[str, int]:
    FLAKY[key] += 1
    if FLAKY[key] < 3:
        raise HTTPException(status_code=503, detail="try again", headers={"retry-after": "0"})
    return {"attempts": FLAKY[key]}


@app.get("/key", operation_id="api_key", tags=["auth"])
def api_key(request: Request) -> dict[str, str | None]:
    """The API key the caller sent (the X-Api-Key header, which the document does not name)."""
    return {"key": request.headers.get("x-api-key")}


@app.get("/hidden", include_in_schema=False)
def hidden() -> dict[str, str]:
    return {"hidden": "yes"}


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
