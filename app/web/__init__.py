"""The front-end's files, served at `/`: plain HTML, CSS and JavaScript modules over the public API."""
