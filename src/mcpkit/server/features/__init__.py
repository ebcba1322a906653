"""The request handlers per feature — tools, resources and templates, prompts,
completions, logging, subscriptions, tasks — each ``async def handler(registry, ctx,
call, params)``, listed in the dispatcher's method table. What they serve is defined in
:mod:`mcpkit.server.definitions`."""
