"""The cost engine: routing, path metrics, collectives and strategies. numpy only."""
