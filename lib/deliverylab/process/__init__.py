"""Child processes the lab starts: one launcher that hands each child to the reaper
(a watchdog that kills it if Python dies) and tails its log when it fails."""
