"""The approvals page's static files (HTML, CSS, JavaScript), served by `gateway.http.webpage`."""
