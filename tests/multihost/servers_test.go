package multihost

func stopDedicatedServers() {}
