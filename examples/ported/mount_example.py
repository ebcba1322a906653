"""FastMCP's examples/mount_example.py, ported to mcpkit: two servers mounted in a
third under prefixes, and the tools and resources the main server then offers
(docs/migrate-fastmcp.md shows the changes).

Run it with ``python examples/ported/mount_example.py``: it prints what the main server
offers, then serves it over stdio until stdin closes.
"""

import asyncio
from typing import Any
from urllib.parse import urlparse

from mcpkit import Client, Server

# Weather sub-application
weather_app = Server("Weather App")


@weather_app.tool
def get_weather_forecast(location: str) -> str:
    """Get the weather forecast for a location."""
    return f"Sunny skies for {location} today!"


@weather_app.resource(uri="weather://forecast")
async def weather_data() -> dict[str, Any]:
    """Return current weather data."""
    return {"temperature": 72, "conditions": "sunny", "humidity": 45, "wind_speed": 5}


# News sub-application
news_app = Server("News App")


@news_app.tool
def get_news_headlines() -> list[str]:
    """Get the latest news headlines."""
    return [
        "Tech company launches new product",
        "Local team wins championship",
        "Scientists make breakthrough discovery",
    ]


@news_app.resource(uri="news://headlines")
async def news_data() -> dict[str, Any]:
    """Return latest news data."""
    return {
        "top_story": "Breaking news: Important event happened",
        "categories": ["politics", "sports", "technology"],
        "sources": ["AP", "Reuters", "Local Sources"],
    }


# Main application
app = Server("Main App")


@app.tool
def check_app_status() -> dict[str, str]:
    """Check the status of the main application."""
    return {"status": "running", "version": "1.0.0", "uptime": "3h 24m"}


# Mount sub-applications
app.mount(server=weather_app, prefix="weather")

app.mount(server=news_app, prefix="news")


async def get_server_details() -> None:
    """Print information about mounted resources."""
    # A server does not list its own tools: a client in memory asks it, as any client would
    async with Client(app) as client:
        # Print available tools
        tools = await client.list_all_tools()
        print(f"\nAvailable tools ({len(tools)}):")
        for tool in tools:
            print(f"  - {tool.name}: {tool.description}")

        # Print available resources
        print("\nAvailable resources:")

        # Distinguish between native and imported resources
        # Native resources would be those directly in the main app (not prefixed)

        resources = [resource.uri for resource in await client.list_all_resources()]

        native_resources = [uri for uri in resources if urlparse(uri).netloc not in ("weather", "news")]

        # Imported resources - categorized by source app
        weather_resources = [uri for uri in resources if urlparse(uri).netloc == "weather"]
        news_resources = [uri for uri in resources if urlparse(uri).netloc == "news"]

        print(f"  - Native app resources: {native_resources}")
        print(f"  - Imported from weather app: {weather_resources}")
        print(f"  - Imported from news app: {news_resources}")

        # Let's try to access resources using the prefixed URI
        weather_data = await client.read_resource("weather://weather/forecast")
        print(f"\nWeather data from prefixed URI: {weather_data.contents[0].text}")


if __name__ == "__main__":
    # First run our async function to display info
    asyncio.run(get_server_details())

    # Then start the server (over stdio: it returns when stdin closes)
    app.run()
