"""Request handlers per feature: tools, resources and templates, prompts, completions, logging."""
