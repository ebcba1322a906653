"""Authorization (OAuth 2.1) for both sides.

Empty until its issue lands; listed so that the layering rules already cover it.
"""
