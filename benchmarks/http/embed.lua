-- wrk script: POST /embed with one short FAQ question per request, cycling through examples/faq_assistant/questions.txt.
--   wrk -t2 -c16 -d20s -s benchmarks/http/embed.lua http://127.0.0.1:8080 -- examples/faq_assistant/questions.txt
local questions = {}
local next_index = 1

function init(args)
  local path = args[1] or "examples/faq_assistant/questions.txt"
  for line in io.lines(path) do
    if line:match("%S") then
      questions[#questions + 1] = '{"inputs":"' .. line:gsub('\\', '\\\\'):gsub('"', '\\"') .. '"}'
    end
  end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  local body = questions[next_index]
  next_index = next_index % #questions + 1
  return wrk.format(nil, "/embed", nil, body)
end
