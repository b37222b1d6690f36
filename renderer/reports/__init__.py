"""Reports around the pictures: the HTML and Markdown reports, the explorable report's data, the pull-request
summary, and SVG made safe to inline into an HTML page."""
