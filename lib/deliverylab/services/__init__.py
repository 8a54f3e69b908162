"""Chapter 06's services: instances that consume and cause side effects (HTTP calls, a
database), the fleet that runs them as child processes, the count of their effects."""
