module canal/bench/peers/go

go 1.21
